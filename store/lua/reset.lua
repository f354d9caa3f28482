-- Reset one SKU: set the stock and the initial stock, move the epoch (no sale that read the old
-- stock writes into the new one, commit.lua), clear orders and counters, and delete the SKU's
-- single-instance lock keys (those starting with ARGV[2], and the locks' keys beside them among
-- KEYS, inside the same hash slot).
-- KEYS: 1 stock, 2 orders, 3 initial, 4 epoch counter, then every other key to delete;
-- ARGV: 1 stock, 2 the lock key prefix.
redis.call('set', KEYS[1], ARGV[1])
redis.call('del', KEYS[2])
redis.call('set', KEYS[3], ARGV[1])
if redis.call('exists', KEYS[4]) == 0 then -- as restock.lua: never back to an old epoch
  local t = redis.call('time')
  redis.call('set', KEYS[4], t[1] * 1000 + math.floor(t[2] / 1000))
end
redis.call('incr', KEYS[4])
for i = 5, #KEYS do
  redis.call('del', KEYS[i])
end
for p = 2, #ARGV do
  local cursor = '0'
  repeat
    local r = redis.call('scan', cursor, 'MATCH', ARGV[p] .. '*', 'COUNT', 1000)
    cursor = r[1]
    for _, k in ipairs(r[2]) do
      redis.call('del', k)
    end
  until cursor == '0'
end
return 1
