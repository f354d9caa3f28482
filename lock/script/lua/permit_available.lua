-- Redisson's RPermitExpirableSemaphore availablePermits: the permits whose lease ended come
-- back, then the count is read.
--
-- KEYS[1] value_key    the semaphore: a string holding the number of permits available
-- KEYS[2] timeout_key  "{<name>}:timeout": a sorted set of permit id -> expiry (unix ms)
-- KEYS[3] channel      "redisson_sc:{<name>}"
-- ARGV[1] now          unix ms
--
-- Returns the permits available (0 for a semaphore never set).
local value_key = KEYS[1]
local timeout_key = KEYS[2]
local channel = KEYS[3]
local now = tonumber(ARGV[1])
--! include permit_reclaim.lua

reclaim()
return tonumber(redis.call('get', value_key) or '0')
