
-- A waiter of this process failed to take the lock: the process queues (or keeps its place) until
-- ARGV[3], unless the lock is its own already (the attempt raced a nomination for it).
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
enlist(ARGV[2], ARGV[3])
return 1
