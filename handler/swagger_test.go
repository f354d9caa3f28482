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
