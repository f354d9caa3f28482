-- Redisson's RPermitExpirableSemaphore tryAcquire of one permit: the permits whose lease ended
-- come back first; then one is taken, when one is available, as id until expiry.
--
-- KEYS[1] value_key    the semaphore: a string holding the number of permits available
-- KEYS[2] timeout_key  "{<name>}:timeout": a sorted set of permit id -> expiry (unix ms)
-- KEYS[3] channel      "redisson_sc:{<name>}"
-- ARGV[1] now          unix ms
-- ARGV[2] id           the permit's id: 16 bytes (Redisson's hex id, decoded)
-- ARGV[3] expiry       unix ms when its lease ends
--
-- Returns {1, 0} when taken; {0, at} when not, at the earliest expiry of a permit held (unix ms),
-- or -1 when none held expires.
local value_key = KEYS[1]
local timeout_key = KEYS[2]
local channel = KEYS[3]
local now = tonumber(ARGV[1])
local id = ARGV[2]
local expiry = ARGV[3]
--! include permit_reclaim.lua

-- Redisson's expiry of a permit taken without a lease: it never comes back.
local never = 922337203685477

reclaim()
local available = tonumber(redis.call('get', value_key) or '0')
if available >= 1 then
  redis.call('decr', value_key)
  redis.call('zadd', timeout_key, expiry, id)
  local ttl = redis.call('pttl', value_key)
  if ttl > 0 then
    redis.call('pexpire', timeout_key, ttl)
  end
  return {1, 0}
end
local first = redis.call('zrange', timeout_key, 0, 0, 'withscores')
if first[2] ~= nil and tonumber(first[2]) < never then
  return {0, tonumber(first[2])}
end
return {0, -1}
