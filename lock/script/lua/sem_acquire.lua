-- Redisson's RSemaphore tryAcquire: take permits when at least that many are available. A
-- semaphore whose permits were never set has none.
--
-- KEYS[1] value_key  the semaphore: a string holding the number of permits available
-- ARGV[1] permits    how many to take, above 0
--
-- Returns 1 when taken, 0 when fewer are available.
local value_key = KEYS[1]
local permits = tonumber(ARGV[1])

local available = tonumber(redis.call('get', value_key) or '0')
if available >= permits then
  redis.call('decrby', value_key, permits)
  return 1
end
return 0
