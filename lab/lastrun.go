package lab

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
)

// The last run of each scenario is kept in the data Redis, whoever started it (a dashboard,
// POST /lab/scenarios/{name}/run on any instance, or `seckill lab`), so that a dashboard shows
// the verdicts of runs it did not start; beside it, the drawing of its failing history, if it
// had one that fits MaxKeptHistory, so that any instance serves that drawing too.

// LastRunTTL is how long the last run of a scenario is kept.
const LastRunTTL = 7 * 24 * time.Hour

// LastRunKey is where the last run of scenario name is kept: in the hash slot of the row's own
// SKU (lab-<name>), next to its keys.
func LastRunKey(name string) string { return "{lab-" + name + "}:lastRun" }

// LastHistoryKey is where the drawing of the last run's failing history is kept (gzip), in the
// same hash slot as LastRunKey: the two are written, and read, together in one transaction.
func LastHistoryKey(name string) string { return "{lab-" + name + "}:lastRunHistory" }

// record keeps res as its scenario's last run, with page (the drawing of its failing history,
// compressed) or, when page is nil, with none: a drawing of an older run is deleted. The run is
// over: a cancelled ctx must not lose it. It returns res, HistoryKept cleared when nothing was
// kept.
func (r *Runner) record(ctx context.Context, res Result, page []byte) Result {
	if r.Data == nil {
		res.HistoryKept = false
		return res
	}
	b, err := json.Marshal(res)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_, err = r.Data.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, LastRunKey(res.Name), b, LastRunTTL)
			if page != nil {
				pipe.Set(ctx, LastHistoryKey(res.Name), page, LastRunTTL)
			} else {
				pipe.Del(ctx, LastHistoryKey(res.Name))
			}
			return nil
		})
	}
	if err != nil {
		r.log().Warn("lab: keep the last run", "scenario", res.Name, "err", err)
		res.HistoryKept = false
	}
	return res
}

// LastHistory answers the last run of scenario name kept in the data Redis and the drawing of
// its failing history kept with it (nil when there is none), read together; ok is false when
// the scenario has not run (or not for LastRunTTL).
func (r *Runner) LastHistory(ctx context.Context, name string) (res Result, page []byte, ok bool, err error) {
	var run, drawing *redis.StringCmd
	_, err = r.Data.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		run = pipe.Get(ctx, LastRunKey(name))
		drawing = pipe.Get(ctx, LastHistoryKey(name))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Result{}, nil, false, fmt.Errorf("lab: read the last run of %s: %w", name, err)
	}
	b, err := run.Bytes()
	if errors.Is(err, redis.Nil) {
		return Result{}, nil, false, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil {
		return Result{}, nil, false, fmt.Errorf("lab: the last run of %s: %w", name, err)
	}
	gz, err := drawing.Bytes()
	if errors.Is(err, redis.Nil) {
		return res, nil, true, nil
	}
	if err == nil {
		page, err = gunzip(gz)
	}
	if err != nil {
		return res, nil, true, fmt.Errorf("lab: the drawing of the last run of %s: %w", name, err)
	}
	return res, page, true, nil
}

// gunzip undoes keepPage's compression, reading at most 16 times MaxKeptHistory.
func gunzip(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	page, err := io.ReadAll(io.LimitReader(zr, 16*MaxKeptHistory+1))
	if err == nil && len(page) > 16*MaxKeptHistory {
		err = fmt.Errorf("over %d bytes uncompressed", 16*MaxKeptHistory)
	}
	return page, err
}

// LastRuns answers the last run of every scenario kept in the data Redis, by name; a scenario
// never run (or not for LastRunTTL) is absent.
func (r *Runner) LastRuns(ctx context.Context) (map[string]Result, error) {
	names := Names()
	// One GET per key in a pipeline, not MGET: in a Redis Cluster the keys live in different slots.
	pipe := r.Data.Pipeline()
	cmds := make([]*redis.StringCmd, len(names))
	for i, n := range names {
		cmds[i] = pipe.Get(ctx, LastRunKey(n))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("lab: read the last runs: %w", err)
	}
	out := map[string]Result{}
	for i, cmd := range cmds {
		b, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		var res Result
		if err == nil {
			err = json.Unmarshal(b, &res)
		}
		if err != nil {
			return nil, fmt.Errorf("lab: the last run of %s: %w", names[i], err)
		}
		out[names[i]] = res
	}
	return out, nil
}
