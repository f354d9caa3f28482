-- Read the stock under a fencing token: the read registers the token, so a holder with an older
-- token can no longer write after it (its commit finds a newer token), and the read itself is
-- refused when a newer token has already read or written. Without this, an expired holder could
-- write between a newer holder's read and its write, and the newer write would overwrite it.
-- KEYS: 1 stock, 2 fence, 3 stale counter, 4 epoch counter
-- ARGV: 1 fencing token (> 0)
-- Returns {accepted (1|0), stock or the newest token, exists (1|0), epoch counter or false}.
local token = tonumber(ARGV[1])
local newest = tonumber(redis.call('get', KEYS[2]) or '0')
if token < newest then
  redis.call('incr', KEYS[3])
  return {0, newest, 1, false}
end
local stock = redis.call('get', KEYS[1])
if stock == false then
  return {1, 0, 0, false}
end
redis.call('set', KEYS[2], token)
return {1, stock, 1, redis.call('get', KEYS[4])}
