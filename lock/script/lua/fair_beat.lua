-- Fair lock heartbeat (NewFair): the caller's process says it is alive (fair_alive.lua), and the
-- dead waiters at the head go (fair_queue.lua).
--
-- KEYS[1] lock_key       the lock, Redisson's hash
-- KEYS[2] queue_key      "redisson_lock_queue:{<name>}"
-- KEYS[3] deadlines_key  "redisson_lock_timeout:{<name>}"
-- KEYS[4] alive_key      the processes' marks (fair_alive.lua)
-- KEYS[5] grant_key      the grant hash (fair_queue.lua)
-- KEYS[6] lag_key        the lag hash (fair_lag.lua)
-- ARGV[1..3] (unused)    '', so that the arguments below sit where the acquire script's do
-- ARGV[4] now            unix ms
-- ARGV[5] instance       the caller's instance id
-- ARGV[6] alive_until    unix ms until which it is surely alive
-- ARGV[7] lag_cap        the lag written out past this, ms (fair_lag.lua)
--
-- Returns {first, pttl, holder}: the first waiter ('' when none), the lock's PTTL (-2: free, and
-- the first waiter may take it: its process rings it), and the lock's one holder ('' when none or
-- several): a release that took the lock for a waiter whose grant message was lost is found here.
local lock_key = KEYS[1]
local queue_key = KEYS[2]
local deadlines_key = KEYS[3]
local alive_key = KEYS[4]
local grant_key = KEYS[5]
local lag_key = KEYS[6]
local now = tonumber(ARGV[4])
local instance = ARGV[5]
local alive_until = ARGV[6]
local lag_cap = tonumber(ARGV[7])
--! include fair_queue.lua

mark_alive(instance, alive_until)
drop_dead_waiters()
save_lag()
local holder = ''
if redis.call('type', lock_key).ok == 'hash' then
    local fields = redis.call('hkeys', lock_key)
    if #fields == 1 then
        holder = fields[1]
    end
end
return {head or '', redis.call('pttl', lock_key), holder}
