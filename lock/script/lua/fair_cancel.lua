-- Fair lock: a waiter gives up (RedissonFairLock.acquireFailedAsync). It leaves the queue and the
-- deadlines, and everyone behind it moves up one place (its deadline one thread wait sooner).
-- If it was first and the lock is free, the new first waiter is told at once.
-- KEYS[1] lock name; KEYS[2] queue; KEYS[3] deadlines; KEYS[4] channel prefix; KEYS[5] the alive
-- hash (unused here); KEYS[6] the grant hash (fair_drop_dead.lua); KEYS[7] the lag hash. fair_lag.lua runs before this: whoever is
-- first stays exact, and moving up those behind moves what they owe with them.
-- ARGV[1] field; ARGV[2] thread wait in ms; ARGV[3] unlock message ("0").
settle()
local queue = redis.call('lrange', KEYS[2], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do
  i = i + 1
end
local wasFirst = (i == 1)
for j = i + 1, #queue do
  redis.call('zincrby', KEYS[3], -tonumber(ARGV[2]), queue[j])
end
redis.call('zrem', KEYS[3], ARGV[1])
redis.call('lrem', KEYS[2], 0, ARGV[1])
redis.call('hdel', GRANT, ARGV[1])
look_head()
save_lag()
if wasFirst and head ~= false and redis.call('exists', KEYS[1]) == 0 then
  redis.call('publish', KEYS[4] .. ':' .. head, ARGV[3])
end
return 0
