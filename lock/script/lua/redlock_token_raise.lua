-- Redlock fencing, second round, on one master: raise the token counter to the new token, only
-- where this acquisition still holds the lock (a counter never goes down).
-- KEYS[1] lock key, KEYS[2] token counter (same hash slot); ARGV[1] the acquisition's value,
-- ARGV[2] the token. Returns 1 when raised (or already as high), 0 when the lock here is not ours.
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
local token = tonumber(ARGV[2])
if tonumber(redis.call('get', KEYS[2]) or '0') < token then
  redis.call('set', KEYS[2], token)
end
return 1
