-- A buyer enters the critical section: the lab's direct observation of mutual exclusion.
-- KEYS: 1 the set of buyers inside (sorted by when their request must be over), 2 overlap counter.
-- ARGV: 1 the buyer (order id), 2 how long its request may still run, ms.
-- Entries of buyers whose request must be over by now (a killed process never leaves) are
-- dropped first; an overlap is counted when someone else is still inside. Leaving is a ZREM, so
-- a lost reply on either side can never leave a phantom buyer inside for good.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
redis.call('zadd', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local inside = redis.call('zcard', KEYS[1])
if inside > 1 then
  redis.call('incr', KEYS[2])
end
redis.call('pexpire', KEYS[1], ARGV[2])
return inside
