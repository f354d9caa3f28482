-- permit_reclaim.lua, an include: the permits of an expirable semaphore whose lease has ended come
-- back, as every script of Redisson's RPermitExpirableSemaphore does first.
--! requires value_key, timeout_key, channel, now
--! defines reclaim
--! include publish.lua

-- reclaim moves the permits whose expiry is now or before out of timeout_key and back into
-- value_key, and tells the waiters how many are available; at most 1000 a call (unpack's stack),
-- the rest on the next.
local function reclaim()
  local expired = redis.call('zrangebyscore', timeout_key, 0, now, 'limit', 0, 1000)
  if #expired == 0 then
    return
  end
  redis.call('zrem', timeout_key, unpack(expired))
  local available = redis.call('incrby', value_key, #expired)
  if available > 0 then
    publish(channel, available)
  end
end
