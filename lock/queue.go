package lock

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Queue reads, without changing anything, the waiters queued in Redis for the lock called name,
// first first: each one's field ("<instance-id>:<owner>", as its hold would be written) and its
// deadline, by which it must come for the lock or the next acquire or release passes it over.
// Only NewFair keeps a queue in Redis (a Redisson client's waiters are in it too); the other
// kinds have none and return nil.
func (l *Locker) Queue(ctx context.Context, name string) (fields []string, deadlines []time.Time, err error) {
	f, ok := l.fair()
	if !ok {
		return nil, nil, nil
	}
	return readQueue(ctx, f.rdb, name)
}

// fair is the Locker's fair kind, if it is one.
func (l *Locker) fair() (*fairLocker, bool) {
	if l == nil {
		return nil, false
	}
	f, ok := l.impl.(*fairLocker)
	return f, ok
}

// readQueue reads the fair queue of name in one transaction: the list of waiters, their scores
// and the lag hash (script/lua/fair_lag.lua). A score is the waiter's deadline plus the move-ups
// it still owes: the lag, owed by every waiter but the one the hash names exact, and by none when
// the last waiter the hash knows has left through a script not ours (as fair_lag.lua reads it).
func readQueue(ctx context.Context, rdb redis.UniversalClient, name string) ([]string, []time.Time, error) {
	var list *redis.StringSliceCmd
	var scores *redis.ZSliceCmd
	var lagState *redis.SliceCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		list = p.LRange(ctx, fairQueue(name), 0, -1)
		scores = p.ZRangeWithScores(ctx, fairDeadlines(name), 0, -1)
		lagState = p.HMGet(ctx, fairLag(name), "x", "h", "t")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, redisErr("read the queue of "+name, err)
	}
	queue := list.Val()
	score := map[string]float64{}
	for _, z := range scores.Val() {
		if m, ok := z.Member.(string); ok {
			score[m] = z.Score
		}
	}
	var lag float64
	var exact, tail string
	if v := lagState.Val(); len(v) == 3 {
		if x, ok := v[0].(string); ok {
			lag, _ = strconv.ParseFloat(x, 64)
		}
		exact, _ = v[1].(string)
		tail, _ = v[2].(string)
	}
	if _, known := score[tail]; lag > 0 && tail != "" && !known && (len(queue) == 0 || queue[len(queue)-1] != tail) {
		lag = 0
	}
	deadlines := make([]time.Time, len(queue))
	for i, f := range queue {
		ms := score[f]
		if f != exact {
			ms -= lag
		}
		if _, ok := score[f]; ok {
			deadlines[i] = time.UnixMilli(int64(ms))
		}
	}
	return queue, deadlines, nil
}
