-- Redisson's RReadWriteLock, one read hold given back (RedissonReadLock.unlockInnerAsync). The
-- hold's timeout key goes with it. While other holds remain, the hash lives as long as the
-- longest-lived reader's timeout key; when none is alive and no writer holds it, the lock is
-- deleted and the waiters told with Redisson's unlock message.
--
-- KEYS[1] lock_key        the lock, Redisson's hash
-- KEYS[2] unlock_channel  "redisson_rwlock:{<name>}"
-- KEYS[3] timeout_prefix  "{<name>}:<instance-id>:<owner>:rwlock_timeout"
-- KEYS[4] key_prefix      "{<name>}", the start of every owner's timeout keys
-- ARGV[1] unlock_message  "0" (LockPubSub.UNLOCK_MESSAGE)
-- ARGV[2] field           "<instance-id>:<owner>"
--
-- Returns nil when field holds no read (not ours), 0 when the lock is still held (by our other
-- holds, other readers or a writer), 1 when deleted and published.
local lock_key = KEYS[1]
local unlock_channel = KEYS[2]
local timeout_prefix = KEYS[3]
local key_prefix = KEYS[4]
local unlock_message = ARGV[1]
local field = ARGV[2]
--! include publish.lua

local mode = redis.call('hget', lock_key, 'mode')
if mode == false then
  -- The lock is gone already: wake whoever still waits for it, as Redisson does.
  publish(unlock_channel, unlock_message)
  return nil
end
if redis.call('hexists', lock_key, field) == 0 then
  return nil
end
local holds = redis.call('hincrby', lock_key, field, -1)
if holds == 0 then
  redis.call('hdel', lock_key, field)
end
redis.call('del', timeout_prefix .. ':' .. (holds + 1))

if redis.call('hlen', lock_key) > 1 then
  -- The fields left besides "mode": find the reader whose hold lives longest.
  local longest = -3
  for _, f in ipairs(redis.call('hkeys', lock_key)) do
    local n = tonumber(redis.call('hget', lock_key, f))
    if n ~= nil then
      for i = n, 1, -1 do
        longest = math.max(longest, redis.call('pttl', key_prefix .. ':' .. f .. ':rwlock_timeout:' .. i))
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', lock_key, longest)
    return 0
  end
  if mode == 'write' then
    return 0
  end
end
redis.call('del', lock_key)
publish(unlock_channel, unlock_message)
return 1
