-- The nomination line of NewReentrant (rlock_line.go), prepended to the scripts that use it. It
-- sits beside Redisson's keys and never changes them: the lock hash, its unlock channel and message
-- stay exactly Redisson's. KEYS[1] the lock; KEYS[2] its unlock channel; KEYS[3] the line, a list of
-- process ids in the order they queued (a process is in it once, while it has waiters); KEYS[4] a
-- hash id -> deadline in unix ms; KEYS[5] the nomination channel. ARGV[1] now in unix ms;
-- ARGV[2] this process's id; ARGV[3] its waiters' deadline in unix ms (0: none is waiting);
-- ARGV[4] Redisson's unlock message; ARGV[5] '1' when pub/sub is sharded.
local now = tonumber(ARGV[1])

-- Put id in line (once, keeping its place) until deadline; both keys live at least until then.
local function enlist(id, deadline)
  if redis.call('hset', KEYS[4], id, deadline) == 1 then
    redis.call('rpush', KEYS[3], id)
  end
  local left = tonumber(deadline) - now
  for i = 3, 4 do
    if redis.call('pttl', KEYS[i]) < left then
      redis.call('pexpire', KEYS[i], left)
    end
  end
end

-- Take the first process still waiting off the line (dropping those whose deadline passed: a
-- dead process holds nobody up for longer than its own wait) and announce it on the nomination
-- channel: "<id>|<ms>|<1 or 0>", ms being how long the others leave it alone (its wait, at most
-- 1 s), and 1 when Redisson's unlock message follows. With nobody in line the id is empty and
-- every waiter tries, as in Redisson. The unlock message goes out whenever a client listens on the
-- unlock channel itself, which is how Redisson's waiters listen; this library's processes listen
-- to it by pattern, which PUBSUB NUMSUB does not count, so among them alone it is left out. With
-- sharded pub/sub (no patterns) it always goes out.
local function nominate()
  local nominee, within = '', 0
  while true do
    local id = redis.call('lpop', KEYS[3])
    if not id then
      break
    end
    local d = tonumber(redis.call('hget', KEYS[4], id))
    redis.call('hdel', KEYS[4], id)
    if d and d > now then
      nominee, within = id, math.min(d - now, 1000)
      break
    end
  end
  local announce = ARGV[5] == '1' or redis.call('pubsub', 'numsub', KEYS[2])[2] > 0
  local follows = '0'
  if announce then
    follows = '1'
  end
  redis.call('publish', KEYS[5], nominee .. '|' .. within .. '|' .. follows)
  if announce then
    redis.call('publish', KEYS[2], ARGV[4])
  end
end
