-- NewReentrant's nomination line (rlock_line.lua): a waiter of this process failed to take the
-- lock, so the process queues (or keeps its place) until its waiters' deadline, unless the lock
-- is free already (the attempt raced a nomination for it).
--
-- KEYS[1] lock_key           the lock, Redisson's hash
-- KEYS[2] unlock_channel     "redisson_lock__channel:{<name>}"
-- KEYS[3] line_key           the nomination line: process ids in the order they queued
-- KEYS[4] waiting_key        id -> deadline in unix ms, for each process in line
-- KEYS[5] nomination_prefix  the start of the processes' nomination channels
-- ARGV[1] now                unix ms
-- ARGV[2] process_id         this process's id
-- ARGV[3] deadline           its waiters' deadline in unix ms
--
-- Returns 1 when in line, 0 when the lock is free.
local lock_key = KEYS[1]
local unlock_channel = KEYS[2]
local line_key = KEYS[3]
local waiting_key = KEYS[4]
local nomination_prefix = KEYS[5]
local now = tonumber(ARGV[1])
local process_id = ARGV[2]
local deadline = ARGV[3]
--! include rlock_line.lua

if redis.call('exists', lock_key) == 0 then
  return 0
end
enlist(process_id, deadline)
return 1
