package handler_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"seckill/docs"
	"seckill/internal/apptest"
)

// TestEveryRouteIsInSwagger: each route the service answers (the lab's and /metrics included)
// is in the generated Swagger, so a reader of /swagger/ sees the whole API. The dashboard's page
// and files and Swagger's own UI are not API.
func TestEveryRouteIsInSwagger(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	eng, ok := f.App.Handler.(*gin.Engine)
	if !ok {
		t.Fatalf("the service's handler is a %T, not a *gin.Engine", f.App.Handler)
	}
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal([]byte(docs.SwaggerInfo.ReadDoc()), &spec); err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`:([A-Za-z]+)`)
	seen := map[string]bool{}
	for _, r := range eng.Routes() {
		if r.Path == "/" || strings.HasPrefix(r.Path, "/dashboard/") || strings.HasPrefix(r.Path, "/swagger/") {
			continue
		}
		path := param.ReplaceAllString(r.Path, "{$1}")
		seen[path] = true
		if _, ok := spec.Paths[path][strings.ToLower(r.Method)]; !ok {
			t.Errorf("%s %s is served but not in docs/swagger.json (add a swag comment, then swag init)", r.Method, path)
		}
	}
	if !seen["/metrics"] {
		t.Fatalf("the service under test serves no /metrics: %v", seen)
	}
}

// TestReadyzSwaggerSaysWhatItChecks: /readyz depends on the lock mode and on the stock keys
// (docs/operations.md); its Swagger entry must not claim "every configured Redis answers PING"
// (issue 37, item 8), and must name both.
func TestReadyzSwaggerSaysWhatItChecks(t *testing.T) {
	t.Parallel()
	var spec struct {
		Paths map[string]map[string]struct {
			Summary     string `json:"summary"`
			Description string `json:"description"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(docs.SwaggerInfo.ReadDoc()), &spec); err != nil {
		t.Fatal(err)
	}
	op, ok := spec.Paths["/readyz"]["get"]
	if !ok {
		t.Fatal("no GET /readyz in docs/swagger.json")
	}
	text := strings.ToLower(op.Summary + " " + op.Description)
	if strings.Contains(text, "every configured redis") || strings.Contains(text, "every redis") {
		t.Errorf("the /readyz entry claims every Redis must answer: %q", op.Summary)
	}
	for _, want := range []string{"lock mode", "stock key", "multilock", "majority"} {
		if !strings.Contains(text, want) {
			t.Errorf("the /readyz entry does not mention %q: %s / %s", want, op.Summary, op.Description)
		}
	}
}
