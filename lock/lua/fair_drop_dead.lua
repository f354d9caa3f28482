-- Fair lock prelude, run first by the acquire and the release scripts (prepended to each): the
-- waiters at the head of the queue whose deadline has passed are gone, so drop them.
-- KEYS[2] queue "redisson_lock_queue:{<name>}"; KEYS[3] deadlines "redisson_lock_timeout:{<name>}";
-- ARGV[4] now, unix ms. The key before the last is this project's own hash of the waiters that
-- take a lock handed over from another process (field -> the TTL such a lock gets); Redisson
-- clients neither read nor write it. fair_lag.lua runs before this (the first waiter's deadline
-- is exact, see there). Defines `now` and `keep_queue`.
local now = tonumber(ARGV[4])
settle()
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if head == false then
    break
  end
  local deadline = tonumber(redis.call('zscore', KEYS[3], head))
  if deadline ~= nil and deadline > now then
    break
  end
  redis.call('zrem', KEYS[3], head)
  redis.call('lpop', KEYS[2])
  redis.call('hdel', GRANT, head)
  settle()
end
save_lag()


-- The queue and the deadlines expire with the last waiter's deadline (the latest one: a waiter
-- joins one thread wait after the one before it, and deadlines only move up after that). Past
-- it every waiter in them is dead and the next script would drop them all; so when every
-- waiter crashed, nothing of the line stays in Redis longer than that.
local function keep_queue(ms)
  live_at_least(math.max(ms, 1), {KEYS[2], KEYS[3]})
end
