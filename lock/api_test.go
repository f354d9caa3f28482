package lock_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
)

// maxExported bounds the package's surface: a library as small as redislock's, plus Redisson's
// read-write lock (NewReadWrite, ErrUpgrade) and two semaphores (Semaphore, ExpirableSemaphore,
// their constructors and Permit).
const maxExported = 32

// TestPublicSurface counts the package's exported top-level names (each constant, variable,
// function, type and constructor) and reads its documentation for words of the service it came
// from: the library must stand on its own.
func TestPublicSurface(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	p := doc.New(pkgs["lock"], "github.com/seckill-lab/seckill/lock", 0)
	var names []string
	addValues := func(vs []*doc.Value) {
		for _, v := range vs {
			names = append(names, v.Names...)
		}
	}
	addFuncs := func(fs []*doc.Func) {
		for _, f := range fs {
			names = append(names, f.Name)
		}
	}
	addValues(p.Consts)
	addValues(p.Vars)
	addFuncs(p.Funcs)
	for _, typ := range p.Types {
		names = append(names, typ.Name)
		addValues(typ.Consts)
		addValues(typ.Vars)
		addFuncs(typ.Funcs)
	}
	for _, n := range names {
		if !ast.IsExported(n) {
			t.Errorf("doc lists unexported %s", n)
		}
	}
	t.Logf("%d exported names: %s", len(names), strings.Join(names, " "))
	if len(names) > maxExported {
		t.Errorf("%d exported top-level names, want at most %d", len(names), maxExported)
	}
	words := regexp.MustCompile(`(?i)\b(seckill|lab|scenarios?|inventory|sale)\b`)
	texts := []string{p.Doc}
	for _, typ := range p.Types {
		texts = append(texts, typ.Doc)
		for _, f := range append(typ.Funcs, typ.Methods...) {
			texts = append(texts, f.Doc)
		}
	}
	for _, f := range p.Funcs {
		texts = append(texts, f.Doc)
	}
	for _, v := range append(p.Consts, p.Vars...) {
		texts = append(texts, v.Doc)
	}
	for _, txt := range texts {
		if m := words.FindString(txt); m != "" {
			t.Errorf("the documentation says %q: %.120q", m, txt)
		}
	}
}

// TestDefaultLease: a Locker's default lease is WithLease's, and a nil Locker's the library's.
func TestDefaultLease(t *testing.T) {
	t.Parallel()
	if got := (*lock.Locker)(nil).DefaultLease(); got != 30*time.Second {
		t.Errorf("the library's default lease: %s, want 30s (Redisson's lockWatchdogTimeout)", got)
	}
	l, err := lock.NewLua(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), lock.WithLease(7*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := l.DefaultLease(); got != 7*time.Second {
		t.Errorf("WithLease(7s): DefaultLease %s", got)
	}
}
