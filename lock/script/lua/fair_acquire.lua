-- Fair lock acquire (NewFair), the rules of Redisson's RFairLock (RedissonFairLock.tryLockInnerAsync):
-- the lock hash as in the reentrant lock, plus a queue of waiting fields and a zset of their
-- deadlines (fair_queue.lua). The first in the queue gets the lock; a waiter whose deadline has
-- passed is dropped from the head of the queue, so a dead waiter holds the line up for at most
-- its wait. Every way out saves the lag (fair_lag.lua).
--
-- KEYS[1] lock_key       the lock, Redisson's hash
-- KEYS[2] queue_key      "redisson_lock_queue:{<name>}"
-- KEYS[3] deadlines_key  "redisson_lock_timeout:{<name>}"
-- KEYS[4] alive_key      the processes' marks (fair_alive.lua)
-- KEYS[5] grant_key      the grant hash (fair_queue.lua)
-- KEYS[6] lag_key        the lag hash (fair_lag.lua)
-- ARGV[1] lease_ms       the lease
-- ARGV[2] field          "<instance-id>:<owner>"
-- ARGV[3] thread_wait    how long a waiter at the head may take to come for the lock, ms
-- ARGV[4] now            unix ms
-- ARGV[5] grant_ttl      the TTL of a lock handed over to this waiter by another process ('0':
--                        hand it none, as a Redisson client is handed none)
-- ARGV[6] handed         '1' when the caller's process does not hold the lock for this field, so
--                        a field found in the hash was handed over to it, not re-entered
-- ARGV[7] keep_for       how long the queue must outlive this join, ms: '0' for the new waiter's
--                        deadline (Redisson's chain, which Java waiters on the queue count on),
--                        else the caller's own wait (it gives up by then, so with only this
--                        library's waiters nothing of the queue outlives the last of them by
--                        more than its wait)
-- ARGV[8] instance       the caller's instance id (fair_alive.lua)
-- ARGV[9] alive_until    unix ms until which it is surely alive ('0': says nothing)
-- ARGV[10] lag_cap       the lag written out past this, ms (fair_lag.lua)
--
-- Returns nil when held by us now, else roughly how many ms until our turn.
local lock_key = KEYS[1]
local queue_key = KEYS[2]
local deadlines_key = KEYS[3]
local alive_key = KEYS[4]
local grant_key = KEYS[5]
local lag_key = KEYS[6]
local lease_ms = ARGV[1]
local field = ARGV[2]
local thread_wait = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
local grant_ttl = ARGV[5]
local handed = ARGV[6]
local keep_for = ARGV[7]
local instance = ARGV[8]
local alive_until = ARGV[9]
local lag_cap = tonumber(ARGV[10])
--! include queue_once.lua
--! include fair_queue.lua

mark_alive(instance, alive_until)
drop_dead_waiters()

-- The lock's PTTL, read when it decides something (behind another waiter, as in a crowd, only
-- whether we hold the lock does).
local pttl
local function lock_pttl()
  if pttl == nil then
    pttl = redis.call('pttl', lock_key)
  end
  return pttl
end

-- Free, and nobody waits or we are first in line: take it; everyone behind moves up one place.
if (head == false or head == field) and lock_pttl() == -2 then
  take_lock(field, thread_wait, lease_ms)
  return nil
end

if redis.call('hexists', lock_key, field) == 1 then
  if handed ~= '1' then
    -- Re-entry by the holder.
    redis.call('hincrby', lock_key, field, 1)
  end
  -- Else handed over by a release (fair_release.lua) before this waiter heard of it: held, once.
  redis.call('pexpire', lock_key, lease_ms)
  save_lag()
  return nil
end

-- Join at the tail, due one thread wait after the waiter before us (or after the lock's TTL).
-- Behind a first waiter it owes what the others behind owe (fair_lag.lua); first, it owes nothing.
if tail == nil then
  tail = redis.call('lindex', queue_key, -1)
end
local last = tail
local ttl
if last ~= false and last ~= field then
  ttl = tonumber(redis.call('zscore', deadlines_key, last)) - owed(last) - now
else
  ttl = lock_pttl()
end
local deadline = ttl + thread_wait + now
if last ~= false then
  deadline = deadline + lag
end
if redis.call('zadd', deadlines_key, 'NX', deadline, field) == 0 then
  -- Already in line: our turn comes about when the waiter before us is due.
  save_lag()
  return tonumber(redis.call('zscore', deadlines_key, field)) - owed(field) - thread_wait - now
end
if last == false then
  lag, lag_head = 0, field
end
redis.call('rpush', queue_key, field)
if head == false then
  head = field
end
tail = field
local keep, slack = ttl + thread_wait, 0
if keep_for ~= '0' then
  -- Only this library's waiters: when the keys must live longer, they get a little more than
  -- that (a quarter of the wait, at most a second), so with a crowd one join a second extends
  -- them rather than nearly every one.
  keep = tonumber(keep_for)
  slack = math.min(math.floor(keep / 4), 1000)
end
if grant_ttl ~= '0' then
  redis.call('hset', grant_key, field, grant_ttl)
  live_at_least(keep, {grant_key}, slack)
end
keep_queue(keep, slack)
save_lag()
return ttl
