-- The blind DEL of steps 2-4 of docs/lab.md: delete the lock key whoever holds it. It also returns
-- what it deleted, only so the lab can see when the DEL removed another holder's lock: it observes
-- the bug, it does not prevent it (the key is deleted either way).
-- KEYS[1] lock key. Returns the deleted value, or nil when there was nothing to delete.
local v = redis.call('get', KEYS[1])
if v then
  redis.call('del', KEYS[1])
end
return v
