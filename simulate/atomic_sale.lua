-- Sell one unit only while stock > 0, and record the order, atomically (mode atomic).
-- KEYS: 1 stock, 2 orders, 3 byInstance; ARGV: 1 order record, 2 instance.
-- Returns {sold (1|0), remaining}. A stock value that is not an integer is an error.
local raw = redis.call('get', KEYS[1])
if not raw then
  return redis.error_reply('NOSTOCK stock key ' .. KEYS[1] .. ' does not exist')
end
local stock = tonumber(raw)
if not stock or stock ~= math.floor(stock) then
  return redis.error_reply('stock key ' .. KEYS[1] .. ' is not an integer')
end
if stock <= 0 then
  return {0, stock}
end
local left = redis.call('decr', KEYS[1])
redis.call('rpush', KEYS[2], ARGV[1])
redis.call('hincrby', KEYS[3], ARGV[2], 1)
return {1, left}
