package simulate

import (
	"fmt"
	"html/template"
	"io"
)

// pageTemplate is the step-by-step page of a replay file: self-contained, no external assets.
var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"inc": func(i int) int { return i + 1 }}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>seckill simulate: {{.Kind}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left}
td.cmd{font-family:ui-monospace,monospace;font-size:12px;word-break:break-all}
td.lock{font-family:ui-monospace,monospace;font-size:12px}
tr.fault td{background:#fde2e2}tr.clock td{background:#eef}
.v{color:#b00;font-weight:bold}
</style></head><body>
<h1>{{.Kind}}: {{.Steps}} steps</h1>
<p class="v">{{.Violation}}</p>
<p>{{.Clients}} clients, {{.Rounds}} round(s) each, faults {{.Faults}} (at most {{.MaxFaults}}); trace sha256 <code>{{.TraceHash}}</code>.
Replay: <code>go run . simulate --replay FILE.json --times 10 --json</code>.</p>
<table><tr><th>#</th><th>virtual ms</th><th>who</th><th>command</th><th>reply</th><th>lock key after the step (each master)</th></tr>
{{range $i, $s := .Trace}}<tr class="{{$s.Who}}"><td>{{inc $i}}</td><td>{{$s.At}}</td><td>{{$s.Who}}</td><td class="cmd">{{$s.What}}</td><td class="cmd">{{$s.Reply}}</td><td class="lock">{{$s.Lock}}</td></tr>
{{end}}</table></body></html>
`))

func writePage(w io.Writer, r ReplayFile) error {
	t, err := pageTemplate.Clone()
	if err != nil {
		return fmt.Errorf("simulate: page: %w", err)
	}
	if err := t.Execute(w, r); err != nil {
		return fmt.Errorf("simulate: page: %w", err)
	}
	return nil
}
