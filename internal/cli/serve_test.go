package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestBusyPortIsNamedBeforeAnythingStarts: serve on a port another process listens on ends at
// once, before any in-process Redis, naming the holder (here this test process) and the
// variable that moves the port, as scripts/cluster.sh does (issue 37, item 7); before, it started
// four in-process Redis servers and ended with a bare "bind: address already in use".
func TestBusyPortIsNamedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	env := map[string]string{"SECKILL_SERVER_PORT": strconv.Itoa(port)}
	var out, errOut bytes.Buffer
	err = Run(context.Background(), nil, func(k string) string { return env[k] }, &out, &errOut)
	if err == nil {
		t.Fatal("serve on a busy port: no error")
	}
	msg := err.Error()
	for _, want := range []string{"port " + strconv.Itoa(port) + " is already in use", "pid " + strconv.Itoa(os.Getpid()),
		"SECKILL_SERVER_PORT=" + strconv.Itoa(port+1), "nothing was started"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q: %s", want, msg)
		}
	}
	if s := out.String() + errOut.String(); strings.Contains(s, "in-process redis") || strings.Contains(s, "listening") {
		t.Errorf("something started before the port was checked:\n%s", s)
	}
}

func TestPortHolderOfAFreePort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if got := portHolder(port); !strings.Contains(got, "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("the holder of our own listener: %q", got)
	}
	ln.Close()
	if got := portHolder(port); !strings.Contains(got, "cannot name") {
		t.Errorf("a closed port's holder: %q", got)
	}
}
