package connlimit_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"seckill/internal/connlimit"
)

// client is one raw keep-alive connection.
type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

// get sends one request on the connection and returns the answer's status (0 and the error when
// the connection gives none).
func (cl *client) get(t *testing.T) (int, error) {
	t.Helper()
	_ = cl.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(cl.c, "GET / HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		return 0, err
	}
	res, err := http.ReadResponse(cl.r, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, nil
}

// Past the cap a new connection is answered 503 and closed at once, and the connections already
// open keep being served; once one closes, a new one gets its place.
func TestRefusesPastTheCapAndServesTheRest(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	ln := connlimit.New(srv.Listener, 2)
	refused := make(chan int64, 10)
	ln.OnRefuse = func(n int64) { refused <- n }
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	addr := srv.Listener.Addr().String()

	held := []*client{dial(t, addr), dial(t, addr)}
	for i, cl := range held {
		if st, err := cl.get(t); st != http.StatusOK {
			t.Fatalf("connection %d under the cap: %d, %v", i, st, err)
		}
	}
	began := time.Now()
	extra := dial(t, addr)
	st, err := extra.get(t)
	if st != http.StatusServiceUnavailable || time.Since(began) > time.Second {
		t.Fatalf("a connection past the cap: %d, %v after %v; want 503 at once", st, err, time.Since(began))
	}
	// Closed: end of stream, or a reset (the request it sent was never read).
	var ne net.Error
	if _, err := extra.r.ReadByte(); err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the refused connection stays open: %v", err)
	}
	if n := <-refused; n != 1 || ln.Refused() != 1 {
		t.Fatalf("refusals counted %d (%d), want 1", n, ln.Refused())
	}
	for i, cl := range held {
		if st, err := cl.get(t); st != http.StatusOK {
			t.Fatalf("connection %d after a refusal: %d, %v; want it still served", i, st, err)
		}
	}
	held[0].c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for ln.Open() > 1 { // the server notices the close when its read of the next request ends
		if time.Now().After(deadline) {
			t.Fatalf("%d connections counted open 5 s after one closed", ln.Open())
		}
		time.Sleep(time.Millisecond)
	}
	if st, err := dial(t, addr).get(t); st != http.StatusOK {
		t.Fatalf("a new connection once one closed: %d, %v", st, err)
	}
}
