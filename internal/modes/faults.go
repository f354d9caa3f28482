package modes

import (
	"context"
	"time"
)

// Crash faults: the values of crash= on /inventory/sale.
const (
	CrashAfterLock    = "after-lock"
	CrashBeforeExpire = "before-expire"
)

// Faults are the faults one sale asks for: the lab's parameters of /inventory/sale (FaultWork,
// FaultHolderPause, FaultPauseBeforeDel, the crash faults). They travel on the sale's context
// (WithFaults), outside the service's request: the service never reads them, the lab's sale hook
// (seckill/lab) checks them against the mode and injects them.
type Faults struct {
	Work           time.Duration // business time inside the critical section
	Freeze         time.Duration // stop-the-world pause after the lease check, before the write
	PauseBeforeDel time.Duration // uuid: pause between the value check and the DEL
	Crash          string        // "", CrashAfterLock or CrashBeforeExpire
}

// Asked reports whether f asks for any fault.
func (f Faults) Asked() bool { return f != Faults{} }

type faultsKey struct{}

// WithFaults returns ctx carrying f for the sale it is given to.
func WithFaults(ctx context.Context, f Faults) context.Context {
	return context.WithValue(ctx, faultsKey{}, f)
}

// FaultsFrom returns the faults ctx carries (none: the zero Faults).
func FaultsFrom(ctx context.Context) Faults {
	f, _ := ctx.Value(faultsKey{}).(Faults)
	return f
}
