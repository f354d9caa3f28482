-- Write the new stock and record the order in one step, so a sale is never half-written.
-- KEYS: 1 stock, 2 orders, 3 byInstance, 4 fence, 5 stale counter
-- ARGV: 1 new stock, 2 order record, 3 instance, 4 fencing token (0 = no fencing)
-- Returns {accepted (1|0), newest accepted token}.
local token = tonumber(ARGV[4])
local newest = tonumber(redis.call('get', KEYS[4]) or '0')
if token > 0 then
  if token < newest then
    redis.call('incr', KEYS[5])
    return {0, newest}
  end
  redis.call('set', KEYS[4], token)
  newest = token
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('rpush', KEYS[2], ARGV[2])
redis.call('hincrby', KEYS[3], ARGV[3], 1)
return {1, newest}
