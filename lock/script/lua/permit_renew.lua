-- Redisson's RPermitExpirableSemaphore updateLeaseTime: a permit still held gets a new expiry.
-- One whose lease has ended is given back first, and is not renewed.
--
-- KEYS[1] value_key    the semaphore: a string holding the number of permits available
-- KEYS[2] timeout_key  "{<name>}:timeout": a sorted set of permit id -> expiry (unix ms)
-- KEYS[3] channel      "redisson_sc:{<name>}"
-- ARGV[1] now          unix ms
-- ARGV[2] id           the permit's id (16 bytes)
-- ARGV[3] expiry       unix ms when its lease ends now
--
-- Returns 1 when renewed, 0 when the permit is not held.
local value_key = KEYS[1]
local timeout_key = KEYS[2]
local channel = KEYS[3]
local now = tonumber(ARGV[1])
local id = ARGV[2]
local expiry = ARGV[3]
--! include permit_reclaim.lua

reclaim()
if redis.call('zscore', timeout_key, id) == false then
  return 0
end
redis.call('zadd', timeout_key, expiry, id)
return 1
