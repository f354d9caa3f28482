package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill/internal/redisproc"
)

// TestReadmeShowsTheStartUpLine: the start-up line the README shows is the one `go run .` prints
// (issue 37, item 3 and deliver 4: what the first run started, its in-process Redis servers with
// their ports and the dashboard), up to the ports: serve runs here on free ports, with in-process
// Redis servers as the quick start gets, and its two lines must read as the README's once each
// port is mapped to the README's, in order.
func TestReadmeShowsTheStartUpLine(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```text\n(seckill seckill-8080 listening on .*?)\n```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("README.md shows no start-up line (a text block starting 'seckill seckill-8080 listening on')")
	}
	want := string(block[1])

	// serve picks its ports free, and another test's server may take one before serve binds it:
	// then it ends with the port taken, and starts again on new ports.
	var got []string
	for try := 1; ; try++ {
		var err error
		if got, err = startUpLines(t); err == nil || try == 3 || !strings.Contains(err.Error(), "address already in use") {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		t.Logf("serve, try %d: %v", try, err)
	}
	// Map this run's ports to the README's, in order of appearance.
	port := regexp.MustCompile(`(seckill-|:)(\d{2,5})\b`)
	order := func(s string) []string {
		var out []string
		for _, m := range port.FindAllStringSubmatch(s, -1) {
			if len(out) == 0 || !slices.Contains(out, m[2]) {
				out = append(out, m[2])
			}
		}
		return out
	}
	have := strings.Join(got, "\n")
	from, to := order(have), order(want)
	if len(from) != len(to) {
		t.Fatalf("the README's line has ports %v, serve printed %v:\nREADME: %s\nserve:  %s", to, from, want, have)
	}
	mapped := port.ReplaceAllStringFunc(have, func(s string) string {
		m := port.FindStringSubmatch(s)
		for i, p := range from {
			if p == m[2] {
				return m[1] + to[i]
			}
		}
		return s
	})
	if mapped != want {
		t.Errorf("the README's start-up line is not what serve prints:\nREADME: %s\nserve:  %s", want, mapped)
	}
	if !strings.Contains(mapped, "dashboard http://127.0.0.1:8080/") || !strings.Contains(mapped, "in-process redis on 127.0.0.1:6379,127.0.0.1:6381") {
		t.Errorf("the start-up line does not say what it started: %s", mapped)
	}
}

// startUpLines runs serve on five different free ports (the kernel may hand the same free port
// out twice in a row), with in-process Redis servers, and returns the first two lines it prints;
// an error when it ends before them or prints nothing for 30 s.
func startUpLines(t *testing.T) ([]string, error) {
	var ports []int
	for len(ports) < 5 {
		p, err := redisproc.FreePort()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	env := map[string]string{
		"SECKILL_SERVER_PORT":    strconv.Itoa(ports[0]),
		"SECKILL_REDIS_ADDR":     addr(ports[1]),
		"SECKILL_REDIS_MASTERS":  addr(ports[2]) + "," + addr(ports[3]) + "," + addr(ports[4]),
		"SECKILL_REDIS_EMBEDDED": "always", // what auto does on the quick start's own addresses
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, nil, func(k string) string { return env[k] }, pw, io.Discard)
		pw.Close()
		close(done) // every later receive returns at once
	}()
	defer func() { cancel(); <-done }()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done(): // read on, so serve never blocks writing
			}
		}
		close(lines)
	}()
	var got []string
	timeout := time.After(30 * time.Second)
	for len(got) < 2 {
		select {
		case l, ok := <-lines:
			if !ok {
				return nil, fmt.Errorf("serve ended after %q: %v", got, <-done)
			}
			got = append(got, l)
		case <-timeout:
			return nil, fmt.Errorf("no start-up line within 30 s: %q", got)
		}
	}
	return got, nil
}
