-- Set the stock and move the initial stock by as much, so sold and lost updates stay true; move
-- the epoch, so no sale that read the stock before this can write after it (commit.lua).
-- Without a readable stock or initial stock (the data Redis lost them), the initial stock becomes
-- the new stock plus the orders still recorded.
-- An epoch counter that is missing (a Redis that lost its data) starts from the server's clock in
-- ms, not from 0: a sale that read an epoch before the loss can never find it again.
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
if redis.call('exists', KEYS[4]) == 0 then
  local t = redis.call('time')
  redis.call('set', KEYS[4], t[1] * 1000 + math.floor(t[2] / 1000))
end
redis.call('incr', KEYS[4])
return 1
