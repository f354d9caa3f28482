-- Write the new stock and record the order in one step, so a sale is never half-written.
-- KEYS: 1 stock, 2 orders, 3 byInstance, 4 fence, 5 stale counter, 6 epoch counter
-- ARGV: 1 new stock, 2 order record, 3 instance, 4 fencing token (0 = no fencing),
--       5 the epoch the sale read (the counter + 1; 0 = not checked)
-- Returns {accepted (1), stale (0) or restocked (-1), newest accepted token}.
-- A restock or reset since the read moved the epoch: the new stock was computed from a stock
-- that is no longer there, and writing it would undo the restock, so nothing is written.
local epoch = tonumber(ARGV[5])
local newest = tonumber(redis.call('get', KEYS[4]) or '0')
if epoch > 0 and tonumber(redis.call('get', KEYS[6]) or '0') + 1 ~= epoch then
  return {-1, newest}
end
local token = tonumber(ARGV[4])
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
