package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill-lab/seckill/lock/lockutil"

	"seckill/internal/modes"
	"seckill/lab/fault"
	"seckill/service"
)

// Faults is the lab's sale hook (service.SaleHook): it reads the faults a sale asks for from its
// context (modes.FaultsFrom: the handler puts the query's there, the lab's buyers their own),
// checks them against its bounds and the sale's mode, and injects them: the business time and
// the pause before the write at the sale's steps, the crashes and the pause before the DEL
// through seckill/lab/fault. lab/labapp installs it when lab.enabled; the lab's fleets use it.
type Faults struct {
	// MaxWork, MaxFreeze and MaxPause bound workMs, freezeMs and pauseBeforeDelMs (0: unbounded).
	MaxWork, MaxFreeze, MaxPause time.Duration
}

// FaultsFor is the hook with the bounds of the service's settings (lab.maxWork, lab.maxFreeze,
// lab.maxPause).
func FaultsFor(set service.Settings) Faults {
	return Faults{MaxWork: set.MaxWork, MaxFreeze: set.MaxFreeze, MaxPause: set.MaxPause}
}

var _ service.SaleHook = Faults{}

// Begin checks the faults the sale asks for and returns its steps. Only a sale that asks for a
// crash or a pause carries a fault.Holder: its commands, the watchdog's renewals included, fail
// after a crash and wait out a pause.
func (h Faults) Begin(ctx context.Context, mode modes.Mode) (context.Context, service.SaleSteps, error) {
	f := modes.FaultsFrom(ctx)
	if err := h.check(f, mode); err != nil {
		return ctx, nil, err
	}
	st := steps{faults: f}
	if f.Crash != "" || f.Freeze > 0 || f.PauseBeforeDel > 0 {
		ctx, st.holder = fault.Attach(ctx, fault.Plan{CrashBeforeExpire: f.Crash == modes.CrashBeforeExpire,
			PauseBeforeDel: f.PauseBeforeDel})
	}
	return ctx, st, nil
}

// check refuses a fault that is not one, is out of its bounds, or does not apply to mode.
func (h Faults) check(f modes.Faults, mode modes.Mode) error {
	type check struct {
		name         string
		asked        bool
		value, limit time.Duration
	}
	checks := []check{
		{modes.FaultWork, f.Work != 0, f.Work, h.MaxWork},
		{modes.FaultHolderPause, f.Freeze != 0, f.Freeze, h.MaxFreeze},
		{modes.FaultPauseBeforeDel, f.PauseBeforeDel != 0, f.PauseBeforeDel, h.MaxPause},
	}
	switch f.Crash {
	case "":
	case modes.CrashAfterLock:
		checks = append(checks, check{name: modes.FaultCrashAfterLock, asked: true})
	case modes.CrashBeforeExpire:
		checks = append(checks, check{name: modes.FaultCrashBeforeExpire, asked: true})
	default:
		return fmt.Errorf("%w: crash=%q is not a fault; use crash=%s or crash=%s",
			service.ErrBadRequest, f.Crash, modes.CrashAfterLock, modes.CrashBeforeExpire)
	}
	for _, c := range checks {
		if !c.asked {
			continue
		}
		if err := service.CheckFault(mode, c.name, c.value, c.limit); err != nil {
			return err
		}
	}
	return nil
}

// steps are one sale's faults at its steps (service.SaleSteps).
type steps struct {
	faults modes.Faults
	holder *fault.Holder // nil unless a crash or a pause is asked
}

func (s steps) Within() time.Duration {
	return s.faults.Work + s.faults.Freeze + s.faults.PauseBeforeDel
}

// Separate: with a holder, a fault may act between the commit and the release.
func (s steps) Separate() bool { return s.holder != nil }

func (s steps) Failed(err error) error {
	if s.holder != nil && s.holder.Crashed() {
		return fmt.Errorf("%w: %w", service.ErrCrashed, err)
	}
	return err
}

// Locked: with crash=after-lock the process "dies" holding the lock: no renewal, no release.
func (s steps) Locked(_ context.Context, key string) error {
	if s.faults.Crash != modes.CrashAfterLock {
		return nil
	}
	s.holder.Crash()
	return fmt.Errorf("%w: lock %s acquired and never released", service.ErrCrashed, key)
}

// Read is the business time.
func (s steps) Read(ctx context.Context) error {
	if s.faults.Work > 0 && !lockutil.Sleep(ctx, s.faults.Work) {
		return ctx.Err()
	}
	return nil
}

// Checked is the pause between the holder's last check of its lease and its write, where a GC
// pause does the damage Kleppmann describes: the holder carries on as if nothing happened.
func (s steps) Checked(ctx context.Context) {
	if s.faults.Freeze > 0 {
		s.holder.Freeze(ctx, s.faults.Freeze)
	}
}
