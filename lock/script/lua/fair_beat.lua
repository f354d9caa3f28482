-- Fair lock heartbeat (NewFair): the caller's process says it is alive (fair_alive.lua), and the
-- dead waiters at the head go (fair_queue.lua). A free lock whose first waiter is of another
-- process wakes it with the unlock message on its channel, as a release that finds the lock not
-- its own does: the dead ahead of it may have gone just now, and nobody else would tell it (a
-- waiter of the caller's process is rung by the caller, from the reply). So is, whatever its
-- process, a waiter dropped for its deadline while its process may live: it looks again and queues.
--
-- KEYS[1] lock_key       the lock, Redisson's hash
-- KEYS[2] queue_key      "redisson_lock_queue:{<name>}"
-- KEYS[3] deadlines_key  "redisson_lock_timeout:{<name>}"
-- KEYS[4] channel_prefix "redisson_lock__channel:{<name>}"
-- KEYS[5] alive_key      the processes' marks (fair_alive.lua)
-- KEYS[6] grant_key      the grant hash (fair_queue.lua)
-- KEYS[7] lag_key        the lag hash (fair_lag.lua)
-- ARGV[1] unlock_message "0"
-- ARGV[2..3] (unused)    '', so that the arguments below sit where the acquire script's do
-- ARGV[4] now            unix ms
-- ARGV[5] instance       the caller's instance id
-- ARGV[6] alive_until    unix ms until which it is surely alive
-- ARGV[7] lag_cap        the lag written out past this, ms (fair_lag.lua)
--
-- Returns {first, pttl, holder}: the first waiter ('' when none), the lock's PTTL (-2: free, and
-- the first waiter may take it), and the lock's one holder ('' when none or several): a release
-- that took the lock for a waiter whose grant message was lost is found here.
local lock_key = KEYS[1]
local queue_key = KEYS[2]
local deadlines_key = KEYS[3]
local channel_prefix = KEYS[4]
local alive_key = KEYS[5]
local grant_key = KEYS[6]
local lag_key = KEYS[7]
local unlock_message = ARGV[1]
local now = tonumber(ARGV[4])
local instance = ARGV[5]
local alive_until = ARGV[6]
local lag_cap = tonumber(ARGV[7])
--! include fair_queue.lua
--! include publish.lua

mark_alive(instance, alive_until)
for _, missed in ipairs(drop_dead_waiters()) do
  publish(channel_prefix .. ':' .. missed, unlock_message)
end
save_lag()
local holder = ''
if redis.call('type', lock_key).ok == 'hash' then
    local fields = redis.call('hkeys', lock_key)
    if #fields == 1 then
        holder = fields[1]
    end
end
local pttl = redis.call('pttl', lock_key)
if head and pttl == -2 and string.sub(head, 1, #instance + 1) ~= instance .. ':' then
  publish(channel_prefix .. ':' .. head, unlock_message)
end
return {head or '', pttl, holder}
