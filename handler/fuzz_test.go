package handler_test

import (
	"net/url"
	"testing"

	"seckill/handler"
)

// FuzzParseSale feeds arbitrary query strings to the sale's parser: it must never panic, and
// whatever it accepts must be within the syntax it promises (known parameters, durations that
// are whole, non-negative milliseconds).
func FuzzParseSale(f *testing.F) {
	for _, seed := range []string{
		"", "lock=lua", "lock=uuid&pauseBeforeDelMs=100", "workMs=-1", "workMs=abc", "crash=after-lock",
		"freezeMs=99999999999999999999", "lock=&sku=", "workMs=1&workMs=2", "x=1", "%zz", "workMs=1e3",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		req, faults, err := handler.ParseSale(q)
		if err != nil {
			return
		}
		if faults.Work < 0 || faults.Freeze < 0 || faults.PauseBeforeDel < 0 || req.Lease < 0 {
			t.Fatalf("accepted a negative duration from %q: %+v %+v", raw, req, faults)
		}
		for name := range q {
			switch name {
			case "lock", "sku", "workMs", "freezeMs", "pauseBeforeDelMs", "crash":
			default:
				t.Fatalf("accepted unknown parameter %q from %q", name, raw)
			}
		}
	})
}
