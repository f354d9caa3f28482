-- NewReentrant's acquire by a waiter (lock/nomination.go): Redisson's RLock acquire
-- (take_hold.lua, as reentrant_acquire.lua), and when someone else holds the lock, the waiter's
-- process queues in the line (line.lua), keeping its place when it is there already, until its
-- waiters' deadline: a release will nominate it.
--
-- KEYS[1] lock_key     the lock, Redisson's hash
-- KEYS[2] line_key     the line: process ids in the order they queued (line.lua)
-- KEYS[3] waiters_key  process id -> "<deadline unix ms>:0" for each process in line
-- ARGV[1] lease_ms     the lease
-- ARGV[2] field        "<instance-id>:<owner>"
-- ARGV[3] now          unix ms
-- ARGV[4] process_id   this process's id
-- ARGV[5] deadline     its waiters' deadline in unix ms
--
-- Returns nil when held by us now, else the lock's PTTL in ms.
local lock_key = KEYS[1]
local line_key = KEYS[2]
local waiters_key = KEYS[3]
local lease_ms = ARGV[1]
local field = ARGV[2]
local now = tonumber(ARGV[3])
local process_id = ARGV[4]
local deadline = ARGV[5]
--! include take_hold.lua
--! include line.lua

if take_hold(lock_key, field, lease_ms) then
  return nil
end
queue(process_id, deadline, 0)
return redis.call('pttl', lock_key)
