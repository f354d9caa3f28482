-- A master whose clock runs fast: every key with a TTL loses ARGV[1] more milliseconds than
-- real time took since the last tick; a key whose TTL runs out this way is gone, as if it
-- had expired. The lock masters hold nothing but lock keys, so KEYS * is small.
-- ARGV: 1 milliseconds to take off every TTL. Returns how many keys expired early.
local extra = tonumber(ARGV[1])
local gone = 0
for _, k in ipairs(redis.call('keys', '*')) do
  local ttl = redis.call('pttl', k)
  if ttl > 0 then
    if ttl <= extra then
      redis.call('del', k)
      gone = gone + 1
    else
      redis.call('pexpire', k, ttl - extra)
    end
  end
end
return gone
