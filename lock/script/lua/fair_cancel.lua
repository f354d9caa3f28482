-- Fair lock: a waiter gives up (NewFair; RedissonFairLock.acquireFailedAsync). It leaves the queue
-- and the deadlines, and everyone behind it moves up one place (its deadline one thread wait
-- sooner). If it was first and the lock is free, the new first waiter is told at once. The first
-- waiter's deadline stays exact, and moving up those behind moves what they owe with them
-- (fair_lag.lua).
--
-- KEYS[1] lock_key        the lock, Redisson's hash
-- KEYS[2] queue_key       "redisson_lock_queue:{<name>}"
-- KEYS[3] deadlines_key   "redisson_lock_timeout:{<name>}"
-- KEYS[4] channel_prefix  "redisson_lock__channel:{<name>}"
-- KEYS[5] (unused)        the processes' marks, as in the release's keys
-- KEYS[6] grant_key       the grant hash (fair_queue.lua)
-- KEYS[7] lag_key         the lag hash (fair_lag.lua)
-- ARGV[1] field           the waiter's "<instance-id>:<owner>"
-- ARGV[2] thread_wait     how far, ms, those behind it move up
-- ARGV[3] unlock_message  "0"
-- ARGV[4] lag_cap         the lag written out past this, ms (fair_lag.lua)
--
-- Returns 0.
local lock_key = KEYS[1]
local queue_key = KEYS[2]
local deadlines_key = KEYS[3]
local channel_prefix = KEYS[4]
local grant_key = KEYS[6]
local lag_key = KEYS[7]
local field = ARGV[1]
local thread_wait = tonumber(ARGV[2])
local unlock_message = ARGV[3]
local lag_cap = tonumber(ARGV[4])
--! include fair_lag.lua
--! include publish.lua

settle()
local queue = redis.call('lrange', queue_key, 0, -1)
local i = 1
while i <= #queue and queue[i] ~= field do
  i = i + 1
end
local was_first = (i == 1)
for j = i + 1, #queue do
  redis.call('zincrby', deadlines_key, -thread_wait, queue[j])
end
redis.call('zrem', deadlines_key, field)
redis.call('lrem', queue_key, 0, field)
redis.call('hdel', grant_key, field)
look_head()
save_lag()
if was_first and head ~= false and redis.call('exists', lock_key) == 0 then
  publish(channel_prefix .. ':' .. head, unlock_message)
end
return 0
