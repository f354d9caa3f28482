-- The nomination line of NewReentrant (rlock_line.go), prepended to the scripts that use it. It
-- sits beside Redisson's keys and never changes them: the lock hash, its unlock channel and message
-- stay exactly Redisson's. KEYS[1] the lock; KEYS[2] its unlock channel; KEYS[3] the line, a list of
-- process ids in the order they queued (a process is in it once, while it has waiters); KEYS[4] a
-- hash id -> deadline in unix ms; KEYS[5] the prefix of the processes' nomination channels
-- (each is "<prefix>:<id>"). ARGV[1] now in unix ms;
-- ARGV[2] this process's id; ARGV[3] its waiters' deadline in unix ms (0: none is waiting);
-- ARGV[4] Redisson's unlock message; ARGV[5] '1' when pub/sub is sharded.
local now = tonumber(ARGV[1])

-- Put id in line (once, keeping its place) until deadline; both keys live at least until then.
local function enlist(id, deadline)
  queue_once(KEYS[3], KEYS[4], id, deadline, tonumber(deadline) - now)
end

-- Take the first process still waiting off the line (dropping those whose deadline passed: a
-- dead process holds nobody up for longer than its own wait) and tell it, on its own nomination
-- channel: its head, and no other process's, tries. Then Redisson's unlock message, whenever a
-- client listens on the unlock channel itself, which is how Redisson's waiters listen; this
-- library's processes listen to it by pattern, which PUBSUB NUMSUB does not count, so among them
-- alone a release sends one message in all. With sharded pub/sub (no patterns) it always goes out.
local function nominate()
  while true do
    local id = redis.call('lpop', KEYS[3])
    if not id then
      break
    end
    local d = tonumber(redis.call('hget', KEYS[4], id))
    redis.call('hdel', KEYS[4], id)
    if d and d > now then
      redis.call('publish', KEYS[5] .. ':' .. id, '1')
      break
    end
  end
  if ARGV[5] == '1' or redis.call('pubsub', 'numsub', KEYS[2])[2] > 0 then
    redis.call('publish', KEYS[2], ARGV[4])
  end
end
