-- One attempt of a waiter of mode lua or fenced (lock/line.go): it takes the lock when the lock
-- is free and nobody waits before it; else it queues (once), unless it is a single attempt.
--
-- KEYS[1] lock_key     the lock, a string holding its holder's value
-- KEYS[2] line_key     the line: waiter values in the order they queued (line.lua)
-- KEYS[3] waiters_key  value -> "<deadline unix ms>:<grant ttl ms>" for each waiter in line
-- KEYS[4] counter_key  the token counter of a fenced lock (the lock key again for lua)
-- ARGV[1] value        the waiter's value "<instance-id>:<uuid>"
-- ARGV[2] now          unix ms
-- ARGV[3] fenced       '1' for a fenced lock (a new holder draws a token), else '0'
-- ARGV[4] lease_ms     the lease
-- ARGV[5] deadline     the waiter's deadline in unix ms ('0': a single attempt, do not queue)
-- ARGV[6] grant_ttl    the TTL, in ms, a lock handed to it gets (min(lease, its wait): what a
--                      dead waiter costs)
--
-- Returns {1, token} when held (also when a release had already handed it over and its message
-- is still on the way: then its TTL is set to the lease); else {0, ms}: how long until it is
-- worth looking again (the lock's PTTL, or, when the lock is free but a live waiter is first,
-- until that waiter's wait ends; at most the grant TTL of the first waiter).
local lock_key = KEYS[1]
local line_key = KEYS[2]
local waiters_key = KEYS[3]
local counter_key = KEYS[4]
local value = ARGV[1]
local now = tonumber(ARGV[2])
local fenced = ARGV[3]
local lease_ms = ARGV[4]
local deadline = ARGV[5]
local grant_ttl = ARGV[6]
--! include line.lua
--! include hand_over.lua

local cur = redis.call('get', lock_key)
if cur == value then
  redis.call('pexpire', lock_key, lease_ms)
  local t = 0
  if fenced == '1' then
    t = tonumber(redis.call('get', counter_key) or '0')
  end
  return {1, t}
end
local head = first_live()
if (not cur) and ((not head) or head == value) then
  if head then
    leave(head)
  end
  return {1, take(value, lease_ms)}
end
if deadline ~= '0' then
  queue(value, deadline, grant_ttl)
end
local ms
if cur then
  ms = redis.call('pttl', lock_key)
else
  ms = entry(head) - now
end
-- A lock handed to the first waiter lives its grant TTL if that waiter is dead: look again by
-- then, so a dead waiter costs its own wait, not the time this one would sleep.
if head and head ~= value and ms >= 0 then
  local _, head_grant_ttl = entry(head)
  ms = math.min(ms, tonumber(head_grant_ttl))
end
return {0, ms}
