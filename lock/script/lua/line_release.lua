-- Release of mode lua or fenced (lock/line.go), which passes the lock on to one waiter only.
-- When the lock is ours: the first live waiter in line gets it (its value written with its grant
-- TTL) and is told on its process's grant channel "<grant_prefix><instance-id>" with
-- "<lock>\n<value>\n<token>", unless it waits in the releasing process, which tells it itself;
-- the releasing process's next waiter joins the line behind. With nobody in line, or with
-- cohort '1', that next waiter gets it; with nobody at all the lock is deleted.
-- When the lock is not ours (a waiter that gives up, or a holder whose lock expired), the value
-- only leaves the line.
-- The grant channel is always classic pub/sub (PUBLISH): line.go subscribes to it with SUBSCRIBE
-- on every topology, so this script has no sharded build.
--
-- KEYS[1] lock_key        the lock, a string holding its holder's value
-- KEYS[2] line_key        the line: waiter values in arrival order (line.lua)
-- KEYS[3] waiters_key     value -> "<deadline unix ms>:<grant ttl ms>" for each waiter in line
-- KEYS[4] counter_key     the token counter of a fenced lock (the lock key again for lua)
-- ARGV[1] value           the holder's value
-- ARGV[2] now             unix ms
-- ARGV[3] fenced          '1' for a fenced lock (a new holder draws a token), else '0'
-- ARGV[4] process_prefix  the releasing process's prefix "<instance-id>:"
-- ARGV[5] grant_prefix    the start of every process's grant channel
-- ARGV[6] next_waiter     the releasing process's next waiter, not in line yet ('': none)
-- ARGV[7] next_deadline   its deadline, unix ms
-- ARGV[8] next_grant_ttl  its grant TTL, ms
-- ARGV[9] next_lease_ms   its lease
-- ARGV[10] cohort         '1' when that waiter may have the lock before the line (its
--                         process's turn lasts: the cohort of line.go)
--
-- Returns {0} not ours; {1} deleted; {2, value, token} handed to the first in line;
-- {3, value, token} handed to the releasing process's next waiter ({3, value, token, 1} when
-- before the line, by cohort, without looking whether anyone was in it).
local lock_key = KEYS[1]
local line_key = KEYS[2]
local waiters_key = KEYS[3]
local counter_key = KEYS[4]
local value = ARGV[1]
local now = tonumber(ARGV[2])
local fenced = ARGV[3]
local process_prefix = ARGV[4]
local grant_prefix = ARGV[5]
local next_waiter = ARGV[6]
local next_deadline = ARGV[7]
local next_grant_ttl = ARGV[8]
local next_lease_ms = ARGV[9]
local cohort = ARGV[10]
--! include line.lua
--! include hand_over.lua

if redis.call('get', lock_key) ~= value then
  remove(value)
  return {0}
end
if cohort == '1' and next_waiter ~= '' then
  return {3, next_waiter, take(next_waiter, next_lease_ms), 1}
end
local first = first_live()
if first then
  local _, first_grant_ttl = entry(first)
  leave(first)
  local t = take(first, first_grant_ttl)
  if next_waiter ~= '' and next_waiter ~= first then
    queue(next_waiter, next_deadline, next_grant_ttl)
  end
  if string.sub(first, 1, #process_prefix) ~= process_prefix then
    local instance = string.match(first, '^([^:]+):')
    redis.call('publish', grant_prefix .. instance, lock_key .. '\n' .. first .. '\n' .. t)
  end
  return {2, first, t}
end
if next_waiter ~= '' then
  return {3, next_waiter, take(next_waiter, next_lease_ms)}
end
redis.call('del', lock_key)
return {1}
