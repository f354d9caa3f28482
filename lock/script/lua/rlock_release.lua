
-- Redisson's RLock release (release_hold.lua, as in reentrant_release.lua) with the nomination:
-- ARGV[6] the lease in ms, ARGV[7] the field. When the lock goes, the releasing process first
-- keeps its place in line for its next waiter (ARGV[3] > 0), then the first in line is nominated,
-- and the unlock message goes out as Redisson's does (nominate).
local released = release_hold(KEYS[1], ARGV[7], ARGV[6])
if released ~= 1 then
  return released
end
if tonumber(ARGV[3]) > 0 then
  enlist(ARGV[2], ARGV[3])
end
nominate()
return 1
