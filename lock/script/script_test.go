package script

import (
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

var (
	// binding is a script's line that names one of its arguments.
	binding = regexp.MustCompile(`^local (\w+) = (?:tonumber\()?(KEYS|ARGV)\[(\d+)\]\)?(?: or '')?$`)
	// argLine is a header's line that documents one.
	argLine = regexp.MustCompile(`^-- (KEYS|ARGV)\[([\d.]+)\] +(\S+)`)
	// topLocal is a top-level local of a file (functions included).
	topLocal = regexp.MustCompile(`^local (?:function (\w+)|([\w, ]+?)(?: =|$))`)
)

// file is one Lua file of lua/, read as this package's doc describes it.
type file struct {
	name, text string
	requires   []string // an include's --! requires
	defines    []string // an include's --! defines
	includes   []string // its --! include lines, in order
}

func (f file) isInclude() bool { return f.defines != nil }

func readFiles(t *testing.T) map[string]file {
	t.Helper()
	out := map[string]file{}
	names, err := fs.Glob(files, "lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range names {
		src, err := files.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f := file{name: strings.TrimPrefix(path, "lua/"), text: string(src)}
		for line := range strings.Lines(f.text) {
			line = strings.TrimSpace(line)
			if v, ok := strings.CutPrefix(line, "--! requires "); ok {
				f.requires = list(v)
			} else if v, ok := strings.CutPrefix(line, "--! defines "); ok {
				f.defines = list(v)
			} else if v, ok := strings.CutPrefix(line, includeLine); ok {
				f.includes = append(f.includes, v)
			}
		}
		out[f.name] = f
	}
	return out
}

func list(v string) []string {
	if v == "(nothing)" {
		return []string{}
	}
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

// fileOf is the file an exported script is built from: LineAcquire is line_acquire.lua.
func fileOf(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' && !(name[i-1] >= 'A' && name[i-1] <= 'Z') {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToLower(b.String()) + ".lua"
}

// TestSourcesAreWhole: every script is listed once, built from the file named after it, and the
// only files beside them are includes some file takes in.
func TestSourcesAreWhole(t *testing.T) {
	t.Parallel()
	fs := readFiles(t)
	if n := len(Names()); n != 28 {
		t.Fatalf("%d scripts, want 28", n)
	}
	used := map[string]bool{}
	for name, src := range Sources() {
		f, ok := fs[fileOf(name)]
		if !ok || f.isInclude() {
			t.Errorf("%s: no script file %s", name, fileOf(name))
			continue
		}
		if own, _, _ := strings.Cut(f.text, includeLine); !strings.HasPrefix(src, own) {
			t.Errorf("%s does not start as %s", name, f.name)
		}
		if !strings.Contains(src, "redis.call") {
			t.Errorf("%s: no redis.call in its source", name)
		}
		used[f.name] = true
	}
	for _, f := range fs {
		for _, inc := range f.includes {
			used[inc] = true
			if fs[inc].text == "" || !fs[inc].isInclude() {
				t.Errorf("%s includes %s, which is not an include file", f.name, inc)
			}
		}
	}
	used["spublish.lua"] = used["publish.lua"]
	for name := range fs {
		if !used[name] {
			t.Errorf("%s is neither a script nor included", name)
		}
	}
}

// TestScriptsNameTheirArguments: each script binds its KEYS and ARGV to named locals in its
// first lines, documents each in its header, and uses them only by name.
func TestScriptsNameTheirArguments(t *testing.T) {
	t.Parallel()
	for _, f := range readFiles(t) {
		if f.isInclude() {
			continue
		}
		documented := map[string]string{} // "KEYS[1]" -> name
		bound := map[string]string{}
		stage := 0 // 0 header, 1 bindings, 2 body
		for line := range strings.Lines(f.text) {
			line = strings.TrimRight(line, "\n")
			if stage == 0 && strings.HasPrefix(line, "--") {
				if m := argLine.FindStringSubmatch(line); m != nil {
					documented[m[1]+"["+m[2]+"]"] = m[3]
				}
				continue
			}
			if stage < 2 {
				if m := binding.FindStringSubmatch(line); m != nil {
					stage = 1
					arg := m[2] + "[" + m[3] + "]"
					bound[arg] = m[1]
					if documented[arg] != m[1] {
						t.Errorf("%s: %s is bound to %s, its header names it %q", f.name, arg, m[1], documented[arg])
					}
					continue
				}
				stage = 2
			}
			if !strings.HasPrefix(strings.TrimSpace(line), "--") && strings.ContainsAny(line, "[") &&
				(strings.Contains(line, "KEYS[") || strings.Contains(line, "ARGV[")) {
				t.Errorf("%s: an argument used by position below the bindings: %s", f.name, line)
			}
		}
		for arg, name := range documented {
			if bound[arg] == "" && name != "(unused)" {
				t.Errorf("%s: its header documents %s %s, which it does not bind", f.name, arg, name)
			}
		}
		if len(bound) == 0 {
			t.Errorf("%s binds no argument", f.name)
		}
	}
}

// TestIncludesKeepTheirContract: an include defines at its top level exactly what its
// --! defines line says, requires what the files it includes require, and each file that
// includes it has bound every name it requires before its include line.
func TestIncludesKeepTheirContract(t *testing.T) {
	t.Parallel()
	fs := readFiles(t)
	for _, f := range fs {
		var defined []string
		for line := range strings.Lines(f.text) {
			if m := topLocal.FindStringSubmatch(strings.TrimRight(line, "\n")); m != nil {
				if m[1] != "" {
					defined = append(defined, m[1])
				}
				for v := range strings.SplitSeq(m[2], ",") {
					if v = strings.TrimSpace(v); v != "" {
						defined = append(defined, v)
					}
				}
			}
		}
		if f.isInclude() {
			if f.requires == nil {
				t.Errorf("%s: an include without a --! requires line", f.name)
			}
			slices.Sort(defined)
			want := slices.Sorted(slices.Values(f.defines))
			if !slices.Equal(defined, want) {
				t.Errorf("%s defines %v at its top level, its header says %v", f.name, defined, want)
			}
		}
		for _, inc := range f.includes {
			for _, need := range fs[inc].requires {
				if f.isInclude() {
					if !slices.Contains(f.requires, need) {
						t.Errorf("%s includes %s, which requires %s: %s must require it too", f.name, inc, need, f.name)
					}
					continue
				}
				before, _, _ := strings.Cut(f.text, includeLine+inc)
				if !regexp.MustCompile(`(?m)^local ` + need + ` = `).MatchString(before) {
					t.Errorf("%s includes %s before binding %s, which it requires", f.name, inc, need)
				}
			}
		}
	}
}

// builtins are the globals Redis gives a script that these scripts use.
var builtins = []string{"redis", "KEYS", "ARGV", "tonumber", "tostring", "string", "math", "table", "unpack", "ipairs", "pairs", "type"}

// globals compiles src and returns the globals it reads or writes, beyond builtins.
func globals(t *testing.T, name, src string) []string {
	t.Helper()
	chunk, err := parse.Parse(strings.NewReader(src), name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	seen := map[string]bool{}
	var walk func(p *lua.FunctionProto)
	walk = func(p *lua.FunctionProto) {
		for _, inst := range p.Code {
			if op := int(inst >> 26); op == lua.OP_GETGLOBAL || op == lua.OP_SETGLOBAL {
				g := p.Constants[int(inst&0x3ffff)].String()
				if op == lua.OP_SETGLOBAL || !slices.Contains(builtins, g) {
					seen[g] = true
				}
			}
		}
		for _, c := range p.FunctionPrototypes {
			walk(c)
		}
	}
	walk(proto)
	return slices.Sorted(maps.Keys(seen))
}

// TestEveryNameIsDefined: every script, classic and sharded, uses only names it defines, its
// includes define, or Redis gives; and every include, compiled alone with the names it requires,
// uses none of its includer's.
func TestEveryNameIsDefined(t *testing.T) {
	t.Parallel()
	for name, src := range Sources() {
		if g := globals(t, name, src); len(g) > 0 {
			t.Errorf("%s uses names nowhere defined: %v", name, g)
		}
	}
	for name, src := range ShardedSources() {
		if g := globals(t, name+" (sharded)", src); len(g) > 0 {
			t.Errorf("%s (sharded) uses names nowhere defined: %v", name, g)
		}
	}
	for _, f := range readFiles(t) {
		if !f.isInclude() {
			continue
		}
		src := build(f.name, nil)
		if len(f.requires) > 0 {
			src = "local " + strings.Join(f.requires, ", ") + "\n" + src
		}
		if g := globals(t, f.name, src); len(g) > 0 {
			t.Errorf("%s uses names it neither defines, includes nor requires: %v", f.name, g)
		}
	}
}

// TestShardedBuildsDifferOnlyInPublish: a sharded build is its classic build with publish.lua's
// text in place of spublish.lua's, and announces only with SPUBLISH; each classic one only with
// PUBLISH.
func TestShardedBuildsDifferOnlyInPublish(t *testing.T) {
	t.Parallel()
	fs := readFiles(t)
	plain, sharded := fs["publish.lua"].text, fs["spublish.lua"].text
	for name, s := range ShardedSources() {
		c := Sources()[name]
		if strings.Replace(c, plain, sharded, 1) != s {
			t.Errorf("%s: the sharded build differs from the classic one beyond publish.lua", name)
		}
		if strings.Contains(c, "'spublish'") || strings.Count(c, "'publish'") != 1 {
			t.Errorf("%s: the classic build does not publish through publish.lua alone", name)
		}
		if strings.Contains(s, "'publish'") || strings.Count(s, "'spublish'") != 1 {
			t.Errorf("%s: the sharded build does not publish through spublish.lua alone", name)
		}
	}
	// A script without a sharded build publishes nothing through publish.lua; LineRelease's grant channel is classic
	// everywhere (lock/line.go subscribes with SUBSCRIBE).
	for name, src := range Sources() {
		if _, ok := ShardedSources()[name]; ok || !strings.Contains(src, includeLine+"publish.lua") {
			continue
		}
		own := fs[fileOf(name)].text
		if strings.Contains(own, "publish(") || strings.Contains(own, "nominate(") {
			t.Errorf("%s publishes through publish.lua but has no sharded build", name)
		}
	}
}
