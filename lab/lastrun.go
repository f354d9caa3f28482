package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The last run of each scenario is kept in the data Redis, whoever started it (a dashboard,
// POST /lab/scenarios/{name}/run on any instance, or `seckill lab`), so that a dashboard shows
// the verdicts of runs it did not start.

// LastRunTTL is how long the last run of a scenario is kept.
const LastRunTTL = 7 * 24 * time.Hour

// LastRunKey is where the last run of scenario name is kept: in the hash slot of the row's own
// SKU (lab-<name>), next to its keys.
func LastRunKey(name string) string { return "{lab-" + name + "}:lastRun" }

// record keeps res as its scenario's last run. The run is over: a cancelled ctx must not lose it.
func (r *Runner) record(ctx context.Context, res Result) {
	if r.Data == nil {
		return
	}
	b, err := json.Marshal(res)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		err = r.Data.Set(ctx, LastRunKey(res.Name), b, LastRunTTL).Err()
	}
	if err != nil {
		r.log().Warn("lab: keep the last run", "scenario", res.Name, "err", err)
	}
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
