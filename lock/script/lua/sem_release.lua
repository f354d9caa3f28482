-- Redisson's RSemaphore release: give permits back and tell the waiters how many are available
-- now. It checks nothing: a release of permits never taken raises the count all the same.
--
-- KEYS[1] value_key  the semaphore: a string holding the number of permits available
-- KEYS[2] channel    "redisson_sc:{<name>}"
-- ARGV[1] permits    how many to give back, above 0
--
-- Returns the permits available after the release.
local value_key = KEYS[1]
local channel = KEYS[2]
local permits = ARGV[1]
--! include publish.lua

local available = redis.call('incrby', value_key, permits)
publish(channel, available)
return available
