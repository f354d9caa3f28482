-- Release a lua lock only if it still holds our value, and pass it on. When no other process is
-- listening on the key's release channel (PUBSUB NUMSUB counts no one but, where ARGV[5] is 1,
-- the releasing process itself), the lock goes straight to this process's next waiter: its value
-- is written in, with its lease, and it holds the lock without a round trip of its own. Otherwise
-- the lock is deleted and the release published, so every process's first waiter can try.
-- KEYS[1] lock key, KEYS[2] its release channel; ARGV[1] the holder's value, ARGV[2] the release
-- message, ARGV[3] the next waiter's value ('' : none), ARGV[4] its lease ms, ARGV[5] 1 when the
-- releasing process is itself subscribed to the channel, else 0.
-- Returns 2 when handed over, 1 when deleted, 0 when the lock was not ours.
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[3] ~= '' then
  local listeners = redis.call('pubsub', 'numsub', KEYS[2])[2]
  if listeners <= tonumber(ARGV[5]) then
    redis.call('set', KEYS[1], ARGV[3], 'PX', ARGV[4])
    return 2
  end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[2])
return 1
