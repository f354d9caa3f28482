-- Create the stock of a fresh SKU: only when it has no stock key, no initial stock and no orders.
-- Its epoch counter starts from the server's clock in ms, as restock.lua's does after a loss.
-- KEYS: 1 stock, 2 initial, 3 orders, 4 epoch counter; ARGV: 1 stock. Returns 1 when created,
-- 0 otherwise.
if redis.call('exists', KEYS[1]) == 1 or redis.call('exists', KEYS[2]) == 1 or redis.call('exists', KEYS[3]) == 1 then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('set', KEYS[2], ARGV[1])
if redis.call('exists', KEYS[4]) == 0 then
  local t = redis.call('time')
  redis.call('set', KEYS[4], t[1] * 1000 + math.floor(t[2] / 1000))
end
return 1
