-- Redisson's RLock release (release_hold.lua, as in reentrant_release.lua) with NewReentrant's
-- line (line.lua, nominate.lua). When the lock goes, the releasing process first keeps its place
-- in line for its next waiter (stay > 0), then the first in line is nominated, and the unlock
-- message goes out as Redisson's does (nominate).
--
-- KEYS[1] lock_key           the lock, Redisson's hash
-- KEYS[2] line_key           the line: process ids in the order they queued
-- KEYS[3] waiters_key        process id -> "<deadline unix ms>:0" for each process in line
-- KEYS[4] unlock_channel     "redisson_lock__channel:{<name>}"
-- KEYS[5] nomination_prefix  the start of the processes' nomination channels
-- ARGV[1] now                unix ms
-- ARGV[2] process_id         this process's id
-- ARGV[3] stay               its waiters' deadline in unix ms (0: none is waiting)
-- ARGV[4] unlock_message     Redisson's unlock message, "0"
-- ARGV[5] sharded            '1' when pub/sub is sharded
-- ARGV[6] lease_ms           the lease
-- ARGV[7] field              "<instance-id>:<owner>"
--
-- Returns nil when the field is not there (not held by this owner), 0 when still held (nested),
-- 1 when deleted (and the next process nominated).
local lock_key = KEYS[1]
local line_key = KEYS[2]
local waiters_key = KEYS[3]
local unlock_channel = KEYS[4]
local nomination_prefix = KEYS[5]
local now = tonumber(ARGV[1])
local process_id = ARGV[2]
local stay = ARGV[3]
local unlock_message = ARGV[4]
local sharded = ARGV[5]
local lease_ms = ARGV[6]
local field = ARGV[7]
--! include release_hold.lua
--! include nominate.lua

local released = release_hold(lock_key, field, lease_ms)
if released ~= 1 then
  return released
end
if tonumber(stay) > 0 then
  queue(process_id, stay, 0)
end
nominate(unlock_message, sharded)
return 1
