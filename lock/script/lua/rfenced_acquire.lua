-- Take a fenced lock in the layout of Redisson's RFencedLock (RedissonFencedLock.tryLockInnerAsync;
-- NewFenced with WithRFencedLockLayout): RLock's hash, whose field "<instance-id>:<owner>" holds
-- the hold count, plus a token counter "redisson_lock_token:{<name>}" that every successful take,
-- re-entries included, raises by one in the same script. So no token is handed to two holders, a
-- failed attempt skips none, and a Java RFencedLock on the same name draws from the same counter
-- (Kleppmann's fencing tokens). When the default layout's counter exists, the token is drawn
-- above it and written back into it, so a switch between the two layouts, either way or one
-- process at a time, never draws a token already handed out.
--
-- KEYS[1] lock_key          the lock, Redisson's hash
-- KEYS[2] counter_key       the token counter "redisson_lock_token:{<name>}"
-- KEYS[3] old_counter_key   optional: the counter of NewFenced's default layout ("<name>:token"),
--                           in the same slot
-- ARGV[1] lease_ms          the lease
-- ARGV[2] field             "<instance-id>:<owner>" (the order of RLock's acquire script)
--
-- Returns {-1, token} when held by us now; {pttl, 0} when someone else holds it (pttl -1: the
-- lock has no TTL). Redisson answers {pttl, -1}, which a lock without TTL makes look like a take.
local lock_key = KEYS[1]
local counter_key = KEYS[2]
local old_counter_key = KEYS[3]
local lease_ms = ARGV[1]
local field = ARGV[2]
--! include take_hold.lua

if take_hold(lock_key, field, lease_ms) then
  local raw = old_counter_key and redis.call('get', old_counter_key)
  local before = raw and tonumber(raw)
  if before and before > tonumber(redis.call('get', counter_key) or '0') then
    redis.call('set', counter_key, before)
  end
  local token = redis.call('incr', counter_key)
  if before then
    redis.call('set', old_counter_key, token)
  end
  return {-1, token}
end
return {redis.call('pttl', lock_key), 0}
