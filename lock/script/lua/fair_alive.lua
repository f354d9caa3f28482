-- Fair lock: this process is alive (the heartbeat of a process with waiters in the queue), then
-- the prelude drops the dead waiters at the head. Runs before fair_lag.lua and fair_drop_dead.lua
-- in the acquire script and in the heartbeat script (fair_beat.lua).
-- KEYS[#KEYS-2] this project's hash of the processes with waiters in the queue (instance id ->
-- unix ms until which it is surely alive); ARGV[#ARGV-2] the caller's instance id, ARGV[#ARGV-1]
-- that ms ('0': the caller says nothing, as a single attempt that does not queue). A waiter whose
-- process is in the hash and past its ms is dead at once (fair_drop_dead.lua), however far its
-- deadline; a Redisson client is never in the hash, so its waiters keep Redisson's deadlines.
if ARGV[#ARGV - 1] ~= '0' then
  redis.call('hset', KEYS[#KEYS - 2], ARGV[#ARGV - 2], ARGV[#ARGV - 1])
  -- Twice what a mark says: a heartbeat comes well before, and when none does (every process
  -- with waiters gone) the hash goes soon after.
  redis.call('pexpire', KEYS[#KEYS - 2], 2 * (tonumber(ARGV[#ARGV - 1]) - tonumber(ARGV[4])))
end
