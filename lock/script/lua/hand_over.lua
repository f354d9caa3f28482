-- hand_over.lua, an include: what the lock of modes lua and fenced is, for the scripts of their
-- line (line_acquire.lua, line_release.lua): a string holding its holder's value, which a release
-- hands over by writing the next holder's value in; a fenced lock's new holder also draws the
-- next token of its counter.
--! requires lock_key, counter_key, fenced
--! defines token, take

-- token is a new holder's token: the next of the counter for a fenced lock, 0 for lua.
local function token()
  if fenced == '1' then
    return redis.call('incr', counter_key)
  end
  return 0
end

-- take makes value the lock's holder for ttl_ms and returns its token.
local function take(value, ttl_ms)
  redis.call('set', lock_key, value, 'PX', ttl_ms)
  return token()
end
