-- Redisson's RPermitExpirableSemaphore release of one permit by its id: the permit goes back
-- and the waiters are told how many are available. One whose lease has ended came back already.
--
-- KEYS[1] value_key    the semaphore: a string holding the number of permits available
-- KEYS[2] timeout_key  "{<name>}:timeout": a sorted set of permit id -> expiry (unix ms)
-- KEYS[3] channel      "redisson_sc:{<name>}"
-- ARGV[1] now          unix ms
-- ARGV[2] id           the permit's id (16 bytes)
--
-- Returns 1 when released, 0 when the permit was not held.
local value_key = KEYS[1]
local timeout_key = KEYS[2]
local channel = KEYS[3]
local now = tonumber(ARGV[1])
local id = ARGV[2]
--! include permit_reclaim.lua

reclaim()
if redis.call('zrem', timeout_key, id) == 0 then
  return 0
end
publish(channel, redis.call('incr', value_key))
return 1
