package policy

import (
	"bufio"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"seckill/explore"
	"seckill/internal/cli"
)

// docFiles are the pages a reader follows: the README, the manual under docs/ and the library's
// page.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "lock/README.md"}
	more, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(files, more...)
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	anchorOut = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
)

// anchors are the heading anchors of a Markdown file, as GitHub makes them: lower case, spaces to
// hyphens, punctuation dropped, repeats numbered.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		m := mdHeading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		text := strings.ToLower(strings.TrimSpace(m[1]))
		text = strings.NewReplacer("`", "", "*", "").Replace(text)
		a := strings.ReplaceAll(anchorOut.ReplaceAllString(text, ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocLinksResolve: every relative link of the README and the manual names a file of the
// repository, and every anchor a heading of the page it points into.
func TestDocLinksResolve(t *testing.T) {
	for _, doc := range docFiles(t) {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for n, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
			}
			if fenced {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				u, err := url.Parse(target)
				if err != nil {
					t.Errorf("%s:%d: link %q: %v", doc, n+1, target, err)
					continue
				}
				if u.Scheme != "" || strings.HasPrefix(target, "//") {
					continue // a public page: checked by the reader, not offline
				}
				file := doc
				if u.Path != "" {
					file = filepath.Join(filepath.Dir(doc), u.Path)
					if _, err := os.Stat(file); err != nil {
						t.Errorf("%s:%d: link %q: no such file %s", doc, n+1, target, file)
						continue
					}
				}
				if u.Fragment != "" && strings.HasSuffix(file, ".md") && !anchors(t, file)[u.Fragment] {
					t.Errorf("%s:%d: link %q: %s has no heading #%s", doc, n+1, target, file, u.Fragment)
				}
			}
		}
	}
}

// TestReadmeCommandsParse: every `go run . …` or `seckill …` command in a shell block of the README
// and the manual parses against the command line's real flags.
func TestReadmeCommandsParse(t *testing.T) {
	checked := 0
	for _, doc := range docFiles(t) {
		f, err := os.Open(doc)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		inShell, n := false, 0
		for sc.Scan() {
			n++
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "```") {
				inShell = !inShell && (line == "```sh" || line == "```bash" || line == "```shell")
				continue
			}
			if !inShell {
				continue
			}
			args, ok := commandArgs(line)
			if !ok {
				continue
			}
			checked++
			if err := cli.Parse(args, io.Discard, io.Discard); err != nil {
				t.Errorf("%s:%d: %q does not parse: %v", doc, n, line, err)
			}
		}
		f.Close()
	}
	if checked == 0 {
		t.Fatal("found no command to check: the README should show how to run the service")
	}
	t.Logf("%d commands parse", checked)
}

// commandArgs returns the arguments of a `go run .` or `seckill` command line, up to a comment,
// a pipe, a redirection or the next command; ok is false for any other line.
func commandArgs(line string) ([]string, bool) {
	fields := strings.Fields(line)
	for len(fields) > 0 && strings.Contains(fields[0], "=") && !strings.HasPrefix(fields[0], "-") {
		fields = fields[1:] // VAR=value before the command
	}
	switch {
	case len(fields) >= 3 && fields[0] == "go" && fields[1] == "run" && fields[2] == ".":
		fields = fields[3:]
	case len(fields) >= 1 && (fields[0] == "seckill" || fields[0] == "./seckill"):
		fields = fields[1:]
	default:
		return nil, false
	}
	var args []string
	for _, f := range fields {
		if strings.HasPrefix(f, "#") || f == "|" || f == "&&" || f == ";" || f == "&" ||
			strings.HasPrefix(f, ">") || strings.HasPrefix(f, "2>") {
			break
		}
		args = append(args, strings.Trim(f, `"'`))
	}
	return args, true
}

// goTestAll matches a `go test` command (flags, then packages) up to a backtick, a comment or
// the end of the line.
var goTestAll = regexp.MustCompile("go test((?:\\s+-[^\\s`]+)*(?:\\s+\\./[^\\s`]*)+)")

// TestDocsGoTestCoversLibrary: every `go test ./...` a page shows also names ./lock/..., since the
// library is a module of its own and ./... alone skips it.
func TestDocsGoTestCoversLibrary(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, doc := range docFiles(t) {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(raw), "\n") {
			for _, m := range goTestAll.FindAllStringSubmatch(line, -1) {
				pkgs := strings.Fields(m[1])
				if !slices.Contains(pkgs, "./...") {
					continue
				}
				checked++
				if !slices.Contains(pkgs, "./lock/...") {
					t.Errorf("%s:%d: %q runs ./... without ./lock/... (the library's own module)", doc, n+1, m[0])
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no page shows `go test ./...`: the README should say how to run the tests")
	}
}

// TestDocsInstallReplaceFirst: a page that tells how to get the library shows the replace (the
// module is not published, so `go get` alone fails) before any `go get` of it, and never as a
// command to run.
func TestDocsInstallReplaceFirst(t *testing.T) {
	t.Parallel()
	const mod = "github.com/seckill-lab/seckill/lock"
	checked := 0
	for _, doc := range docFiles(t) {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		s := string(raw)
		get := strings.Index(s, "go get "+mod)
		if get < 0 {
			continue
		}
		checked++
		if repl := strings.Index(s, "-replace "+mod+"="); repl < 0 || repl > get {
			t.Errorf("%s: `go get %s` comes before `go mod edit -replace %s=…`; until the module is published the replace must come first", doc, mod, mod)
		}
		for n, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "go get "+mod) {
				t.Errorf("%s:%d: `go get %s` as a command fails until the module is published", doc, n+1, mod)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no page tells how to get the library")
	}
}

// TestExploreDocShowsTheNarrowTable: the explorer's tables in docs/explore.md are what the
// command prints by default, within explore.TableWidth columns.
func TestExploreDocShowsTheNarrowTable(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("docs/explore.md")
	if err != nil {
		t.Fatal(err)
	}
	tables := 0
	for i, block := range strings.Split(string(raw), "```") {
		if i%2 == 0 || !strings.Contains(block, "\nMODE ") {
			continue // outside a fenced block, or not a table of the explorer
		}
		tables++
		for _, line := range strings.Split(block, "\n") {
			if n := len([]rune(line)); n > explore.TableWidth {
				t.Errorf("docs/explore.md: a line of a table is %d columns wide, more than the command's %d: %s", n, explore.TableWidth, line)
			}
		}
		if strings.Contains(block, "FAULTS DRAWN") {
			t.Error("docs/explore.md shows the --wide table as the default one")
		}
	}
	if tables == 0 {
		t.Fatal("docs/explore.md shows no table of the explorer")
	}
}

// goTestTestFunc matches a test function's name in a _test.go file.
var goTestTestFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(`)

// TestDocsGoTestCommandsNameRealTests: every `go test` command in a shell block of the pages
// names packages that exist and, with -run, a pattern whose every alternative matches a test of
// those packages: a reader who runs it runs what the page says.
func TestDocsGoTestCommandsNameRealTests(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, doc := range docFiles(t) {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		inShell := false
		for n, line := range strings.Split(string(raw), "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "```") {
				inShell = !inShell && (trimmed == "```sh" || trimmed == "```bash" || trimmed == "```shell")
				continue
			}
			fields := strings.Fields(trimmed)
			for len(fields) > 0 && strings.Contains(fields[0], "=") {
				fields = fields[1:] // VAR=value before the command
			}
			if !inShell || len(fields) < 2 || fields[0] != "go" || fields[1] != "test" {
				continue
			}
			checked++
			var run string
			var names []string // the test functions of the packages named
			for i := 2; i < len(fields); i++ {
				f := fields[i]
				if strings.HasPrefix(f, "#") {
					break
				}
				switch {
				case f == "-run" && i+1 < len(fields):
					run, i = strings.Trim(fields[i+1], `'"`), i+1
				case strings.HasPrefix(f, "./") && !strings.HasSuffix(f, "..."):
					dir := strings.TrimSuffix(f, "/")
					files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
					if err != nil || len(files) == 0 {
						t.Errorf("%s:%d: %s has no tests (%v)", doc, n+1, f, err)
					}
					for _, file := range files {
						b, err := os.ReadFile(file)
						if err != nil {
							t.Fatal(err)
						}
						for _, m := range goTestTestFunc.FindAllStringSubmatch(string(b), -1) {
							names = append(names, m[1])
						}
					}
				}
			}
			if run == "" || len(names) == 0 {
				continue
			}
			for _, alt := range topLevelAlternatives(run) {
				re, err := regexp.Compile(alt)
				if err != nil {
					t.Errorf("%s:%d: -run %q: %v", doc, n+1, run, err)
					continue
				}
				if !slices.ContainsFunc(names, re.MatchString) {
					t.Errorf("%s:%d: -run %q: %q matches no test of the packages named", doc, n+1, run, alt)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no page shows a go test command")
	}
}

// topLevelAlternatives splits a regular expression at the | outside parentheses.
func topLevelAlternatives(re string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range re {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case '|':
			if depth == 0 {
				out = append(out, re[start:i])
				start = i + 1
			}
		}
	}
	return append(out, re[start:])
}

var (
	mdInlineCode = regexp.MustCompile("`[^`]*`")
	mdImage      = regexp.MustCompile(`!\[[^\]]*\]\([^)]*\)`)
	mdLinkText   = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	mdListItem   = regexp.MustCompile(`^([-*]|\d+\.)\s+`)
	sentenceEnd  = regexp.MustCompile(`[.!?]\s+`)
)

// proseSentences returns the sentences of a Markdown page's prose, each with the heading it is
// under: code blocks, tables, headings and HTML are left out, a list item is a paragraph of its
// own, an inline code span or a link counts as its text.
func proseSentences(page string) (sentences, headings []string) {
	var para []string
	heading := ""
	flush := func() {
		if len(para) == 0 {
			return
		}
		p := strings.Join(para, " ")
		p = mdImage.ReplaceAllString(p, "")
		p = mdLinkText.ReplaceAllString(p, "$1")
		p = mdInlineCode.ReplaceAllString(p, "code")
		p = strings.NewReplacer("e.g.", "eg", "i.e.", "ie").Replace(p)
		for _, s := range sentenceEnd.Split(p, -1) {
			if strings.TrimSpace(s) != "" {
				sentences = append(sentences, s)
				headings = append(headings, heading)
			}
		}
		para = para[:0]
	}
	fenced := false
	for _, line := range strings.Split(page, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			flush()
			continue
		}
		if fenced {
			continue
		}
		if m := mdHeading.FindStringSubmatch(l); m != nil {
			flush()
			heading = strings.TrimSpace(m[1])
			continue
		}
		if l == "" || strings.HasPrefix(l, "|") || strings.HasPrefix(l, "<") || strings.HasPrefix(l, "![") {
			flush()
			continue
		}
		if mdListItem.MatchString(l) {
			flush()
			l = mdListItem.ReplaceAllString(l, "")
		}
		para = append(para, l)
	}
	flush()
	return sentences, headings
}

// TestDocSentencesUnder50Words: no sentence of the README or the manual is longer than 50 words,
// so a reader can follow each one.
func TestDocSentencesUnder50Words(t *testing.T) {
	t.Parallel()
	const limit = 50
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range append([]string{"README.md"}, pages...) {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		sentences, headings := proseSentences(string(raw))
		for i, s := range sentences {
			if n := len(strings.Fields(s)); n > limit {
				t.Errorf("%s (%s): a sentence of %d words, more than %d: %.120s…", doc, headings[i], n, limit, s)
			}
		}
	}
}

// sourceRule is a pointer into a source file's numbered rules ("waiting.go rule 11", "rules 6 and
// 17"), which a user of the manual cannot follow and which goes stale when the rules move.
var sourceRule = regexp.MustCompile(`(?i)\.go\b[^.\n]{0,40}\brules? \d`)

// TestDocsPointIntoNoSourceRules: the README and the manual name a test or a section, never a
// source file's rule by its number.
func TestDocsPointIntoNoSourceRules(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range append([]string{"README.md", "lock/README.md"}, pages...) {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\n") {
			if m := sourceRule.FindString(line); m != "" {
				t.Errorf("%s:%d points into a source rule by number: %q", doc, i+1, m)
			}
		}
	}
}
