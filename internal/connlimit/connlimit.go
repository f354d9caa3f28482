// Package connlimit caps the connections a listener keeps open. Past the cap a new connection is
// answered at once, with a short HTTP 503 and a close, instead of waiting in the kernel's accept
// queue (golang.org/x/net/netutil.LimitListener blocks Accept, so clients past its cap hang until
// they time out). The connections already open are served as before.
package connlimit

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// refusal is what a refused connection reads before the close.
var refusal = func() []byte {
	body := `{"error":"too many open connections (server.maxConns); try again shortly","status":503}`
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

// Listener is a net.Listener that keeps at most Max connections open at once.
type Listener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused atomic.Int64
	// OnRefuse, when set, is called after each refusal with the count so far (for a log line).
	OnRefuse func(total int64)
}

// New caps ln at max open connections (max >= 1).
func New(ln net.Listener, max int) *Listener {
	return &Listener{Listener: ln, max: int64(max)}
}

// Open is how many accepted connections are open now.
func (l *Listener) Open() int64 { return l.open.Load() }

// Refused is how many connections were refused so far.
func (l *Listener) Refused() int64 { return l.refused.Load() }

// Accept returns the next connection under the cap. One past it is refused (a 503 and a close,
// written within a short deadline so a client that reads nothing cannot hold the loop), and
// Accept goes on waiting for the next.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &conn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		_, _ = c.Write(refusal)
		_ = c.Close()
		n := l.refused.Add(1)
		if l.OnRefuse != nil {
			l.OnRefuse(n)
		}
	}
}

// conn gives its place back once, on its first Close, before the close itself: a client that saw
// its connection end may connect again at once and find the place free.
type conn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
