-- Take a fenced lock in the layout of Redisson's RFencedLock (RedissonFencedLock.tryLockInnerAsync):
-- RLock's hash, whose field "<instance-id>:<owner>" holds the hold count, plus a token counter
-- "redisson_lock_token:{<name>}" that every successful take, re-entries included, raises by one in
-- the same script. So no token is handed to two holders, a failed attempt skips none, and a Java
-- RFencedLock on the same name draws from the same counter (Kleppmann's fencing tokens).
-- KEYS[3], when given, is the counter of NewFenced's default layout ("<name>:token"), in the same
-- slot. When it exists the token is drawn above it and written back into it, so a switch between
-- the two layouts, either way or one process at a time, never draws a token already handed out.
-- KEYS[1] lock name, KEYS[2] token counter, KEYS[3] (optional) the default layout's counter;
-- ARGV[1] lease ms, ARGV[2] field (the order of RLock's acquire script).
-- Returns {-1, token} when held by us now; {pttl, 0} when someone else holds it (pttl -1: the
-- lock has no TTL). Redisson answers {pttl, -1}, which a lock without TTL makes look like a take.
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  local raw = KEYS[3] and redis.call('get', KEYS[3])
  local before = raw and tonumber(raw)
  if before and before > tonumber(redis.call('get', KEYS[2]) or '0') then
    redis.call('set', KEYS[2], before)
  end
  local token = redis.call('incr', KEYS[2])
  if before then
    redis.call('set', KEYS[3], token)
  end
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {-1, token}
end
return {redis.call('pttl', KEYS[1]), 0}
