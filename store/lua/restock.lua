-- Set the stock and move the initial stock by as much, so sold and lost updates stay true; move
-- the epoch, so no sale that read the stock before this can write after it (commit.lua).
-- Without a readable stock or initial stock (the data Redis lost them), the initial stock becomes
-- the new stock plus the orders still recorded.
-- KEYS: 1 stock, 2 initial, 3 orders, 4 epoch counter; ARGV: 1 new stock.
local new = tonumber(ARGV[1])
local old = tonumber(redis.call('get', KEYS[1]) or '')
local initial = tonumber(redis.call('get', KEYS[2]) or '')
if old and initial then
  redis.call('set', KEYS[2], initial + new - old)
else
  redis.call('set', KEYS[2], new + redis.call('llen', KEYS[3]))
end
redis.call('set', KEYS[1], new)
redis.call('incr', KEYS[4])
return 1
