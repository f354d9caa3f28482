-- Redisson's trySetPermits, the same for RSemaphore and RPermitExpirableSemaphore: set the number
-- of permits once, while the semaphore has none set, and tell the waiters how many there are.
--
-- KEYS[1] value_key  the semaphore: a string holding the number of permits available
-- KEYS[2] channel    "redisson_sc:{<name>}"
-- ARGV[1] permits    the number of permits
--
-- Returns 1 when set, 0 when the semaphore was set already.
local value_key = KEYS[1]
local channel = KEYS[2]
local permits = ARGV[1]
--! include publish.lua

if redis.call('exists', value_key) == 1 then
  return 0
end
redis.call('set', value_key, permits)
publish(channel, permits)
return 1
