-- Fair lock acquire, the rules of Redisson's RFairLock (RedissonFairLock.tryLockInnerAsync):
-- the lock hash as in the reentrant lock, plus a queue of waiting fields (a list) and a zset of
-- their deadlines. The first in the queue gets the lock; a waiter whose deadline has passed is
-- dropped from the head of the queue, so a dead waiter holds the line up for at most its wait.
-- KEYS[1] lock name; KEYS[2] queue "redisson_lock_queue:{<name>}";
-- KEYS[3] deadlines "redisson_lock_timeout:{<name>}"; KEYS[4] the alive hash (fair_alive.lua);
-- KEYS[5] the grant hash (fair_drop_dead.lua); KEYS[6] the lag hash (fair_lag.lua);
-- ARGV[1] lease in ms; ARGV[2] field "<instance-id>:<owner>"; ARGV[3] thread wait in ms
-- (how long a waiter at the head may take to come for the lock); ARGV[4] now, unix ms;
-- ARGV[5] the TTL of a lock handed over to this waiter by another process ('0': hand it none, as
-- a Redisson client is handed none); ARGV[6] '1' when the caller's process does not hold the
-- lock for this field, so a field found in the hash was handed over to it, not re-entered;
-- ARGV[7] how long the queue must outlive this join, in ms: '0' for the new waiter's deadline
-- (Redisson's chain, which Java waiters on the queue count on), else the caller's own wait (it
-- gives up by then, so with only this library's waiters nothing of the queue outlives the last
-- of them by more than its wait); ARGV[8] instance id and ARGV[9] alive until (fair_alive.lua);
-- ARGV[10] the lag cap.
-- Returns nil when held by us now, else roughly how many ms until our turn.
-- fair_lag.lua and fair_drop_dead.lua run before this (they define `now`, `head`, `owed`,
-- `move_up`, `take_lock`...); every way out saves the lag.
local wait = tonumber(ARGV[3])
-- The lock's PTTL, read when it decides something (behind another waiter, as in a crowd, only
-- whether we hold the lock does).
local pttl
local function lock_pttl()
  if pttl == nil then
    pttl = redis.call('pttl', KEYS[1])
  end
  return pttl
end

-- Free, and nobody waits or we are first in line: take it; everyone behind moves up one place.
if (head == false or head == ARGV[2]) and lock_pttl() == -2 then
  take_lock(ARGV[2], wait, ARGV[1])
  return nil
end

if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  if ARGV[6] ~= '1' then
    -- Re-entry by the holder.
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
  end
  -- Else handed over by a release (fair_release.lua) before this waiter heard of it: held, once.
  redis.call('pexpire', KEYS[1], ARGV[1])
  save_lag()
  return nil
end

-- Join at the tail, due one thread wait after the waiter before us (or after the lock's TTL).
-- Behind a first waiter it owes what the others behind owe (fair_lag.lua); first, it owes nothing.
if tail == nil then
  tail = redis.call('lindex', KEYS[2], -1)
end
local last = tail
local ttl
if last ~= false and last ~= ARGV[2] then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - owed(last) - now
else
  ttl = lock_pttl()
end
local deadline = ttl + wait + now
if last ~= false then
  deadline = deadline + lag
end
if redis.call('zadd', KEYS[3], 'NX', deadline, ARGV[2]) == 0 then
  -- Already in line: our turn comes about when the waiter before us is due.
  save_lag()
  return tonumber(redis.call('zscore', KEYS[3], ARGV[2])) - owed(ARGV[2]) - wait - now
end
if last == false then
  lag, lag_head = 0, ARGV[2]
end
redis.call('rpush', KEYS[2], ARGV[2])
if head == false then
  head = ARGV[2]
end
tail = ARGV[2]
local keep, slack = ttl + wait, 0
if ARGV[7] ~= '0' then
  -- Only this library's waiters: when the keys must live longer, they get a little more than
  -- that (a quarter of the wait, at most a second), so with a crowd one join a second extends
  -- them rather than nearly every one.
  keep = tonumber(ARGV[7])
  slack = math.min(math.floor(keep / 4), 1000)
end
if ARGV[5] ~= '0' then
  redis.call('hset', GRANT, ARGV[2], ARGV[5])
  live_at_least(keep, {GRANT}, slack)
end
keep_queue(keep, slack)
save_lag()
return ttl
