package handler_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/lock"

	"seckill/config"
	"seckill/store"
)

// With the public posture and every checkout permit held elsewhere, an anonymous sale is a 503
// with Retry-After at once that names the limit, and Redis is unchanged; the refusal is counted in
// /metrics, /locks shows no permit free, and once the permit is back the sale sells.
func TestCheckoutFullIs503AndChangesNothing(t *testing.T) {
	t.Parallel()
	p := newPosture(t, false, secret(t, "tok-"), func(c *config.Config) { c.Checkout.Limit, c.Checkout.Wait = 1, 0 })
	p.stock(t, 5)
	ctx := context.Background()
	other, err := lock.NewExpirableSemaphore(p.f.App.Data)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	held, err := other.TryAcquire(ctx, store.KeysFor("inventory001").CheckoutOf(1), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := p.state(t)
	start := time.Now()
	r := p.send(t, http.MethodPost, "/inventory/sale", "", "")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" ||
		!strings.Contains(r.raw, "checkout full") || !strings.Contains(r.raw, "checkout.limit") || time.Since(start) > time.Second {
		t.Fatalf("a sale with no checkout permit free: %d after %s: %s, want a 503 at once naming checkout.limit, with Retry-After",
			r.status, time.Since(start), r.raw)
	}
	p.unchanged(t, "a sale refused a checkout permit", before)
	if m := p.send(t, http.MethodGet, "/metrics", "", ""); !strings.Contains(m.raw, `seckill_checkout_refusals_total{sku="inventory001"} 1`) {
		t.Fatalf("/metrics does not count the refusal: %.2000s", m.raw)
	}
	if l := p.send(t, http.MethodGet, "/locks", "", ""); !strings.Contains(l.raw, `"limit":1`) || !strings.Contains(l.raw, `"available":0`) {
		t.Fatalf("/locks does not show the checkout full: %s", l.raw)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if r := p.send(t, http.MethodPost, "/inventory/sale", "", ""); r.status != http.StatusOK {
		t.Fatalf("a sale once the permit is back: %d %s", r.status, r.raw)
	}
	// The sale gives its permit back beside its answer, not in it (service/checkout.go): /locks
	// shows it back once that release has run.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		l := p.send(t, http.MethodGet, "/locks", "", "")
		if strings.Contains(l.raw, `"available":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/locks 5 s after the sale: the permit is not back: %s", l.raw)
		}
	}
}
