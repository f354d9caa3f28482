package lab

import (
	"fmt"
	"io"
	"time"

	"github.com/anishathalye/porcupine"
)

// HistoryVerdict is CheckHistory's verdict without writing anything: for callers that check many
// histories (seckill explore) and draw only the ones they keep.
func HistoryVerdict(initial int64, origin time.Time, outs []Outcome) string {
	ops := historyOps(origin, outs)
	model, checked := modelFrom(initial), ops
	if part := witness(initial, ops); part != nil {
		model, checked = modelFromAny(initial), part
	}
	switch porcupine.CheckOperationsTimeout(model, checked, historyTimeout) {
	case porcupine.Ok:
		return Linearizable
	case porcupine.Unknown:
		return HistoryTimeout
	}
	return NotLinearizable
}

// WriteHistoryHTML writes porcupine's visualisation of the whole history to w, whatever its
// verdict (the lab's timeline of one run), and returns the verdict.
func WriteHistoryHTML(w io.Writer, initial int64, origin time.Time, outs []Outcome) (string, error) {
	model := modelFrom(initial)
	res, info := porcupine.CheckOperationsVerbose(model, historyOps(origin, outs), historyTimeout)
	verdict := NotLinearizable
	switch res {
	case porcupine.Ok:
		verdict = Linearizable
	case porcupine.Unknown:
		verdict = HistoryTimeout
	}
	if err := porcupine.Visualize(model, info, w); err != nil {
		return verdict, fmt.Errorf("lab: history visualisation: %w", err)
	}
	return verdict, nil
}
