-- NewReentrant's line (line.lua, nominate.lua): this process was nominated but none of its
-- waiters is left, or its last waiter gave up. It leaves the line and, when the lock is free, the
-- next process is nominated (with a fresh unlock message where a Redisson client listens, which
-- takes it as one more release).
--
-- KEYS[1] lock_key           the lock, Redisson's hash
-- KEYS[2] line_key           the line: process ids in the order they queued
-- KEYS[3] waiters_key        process id -> "<deadline unix ms>:0" for each process in line
-- KEYS[4] unlock_channel     "redisson_lock__channel:{<name>}"
-- KEYS[5] nomination_prefix  the start of the processes' nomination channels
-- ARGV[1] now                unix ms
-- ARGV[2] process_id         this process's id
-- ARGV[3] unlock_message     Redisson's unlock message, "0"
-- ARGV[4] sharded            '1' when pub/sub is sharded
--
-- Returns 0 when the lock is held (nobody nominated), 1 when the next process was nominated.
local lock_key = KEYS[1]
local line_key = KEYS[2]
local waiters_key = KEYS[3]
local unlock_channel = KEYS[4]
local nomination_prefix = KEYS[5]
local now = tonumber(ARGV[1])
local process_id = ARGV[2]
local unlock_message = ARGV[3]
local sharded = ARGV[4]
--! include nominate.lua

remove(process_id)
if redis.call('exists', lock_key) == 1 then
  return 0
end
nominate(unlock_message, sharded)
return 1
