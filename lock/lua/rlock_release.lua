
-- Redisson's RLock release (reentrant_release.lua) with the nomination: ARGV[6] the lease in
-- ms, ARGV[7] the field. When the lock goes, the releasing process first keeps its place in line
-- for its next waiter (ARGV[3] > 0), then the first in line is nominated, and the unlock message
-- goes out as Redisson's does (nominate).
if (redis.call('hexists', KEYS[1], ARGV[7]) == 0) then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[7], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[6])
  return 0
end
redis.call('del', KEYS[1])
if tonumber(ARGV[3]) > 0 then
  enlist(ARGV[2], ARGV[3])
end
nominate()
return 1
