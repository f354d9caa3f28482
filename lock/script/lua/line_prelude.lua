-- The waiter line of modes lua and fenced (line.go), prepended to line_acquire.lua and
-- line_release.lua. KEYS[1] the lock; KEYS[2] the line, a list of waiter values in arrival order
-- (one waiter per process at a time: only the head of a process's own line queues here);
-- KEYS[3] the waiters, a hash value -> "<deadline ms>:<grant ttl ms>"; KEYS[4] the token counter
-- of a fenced lock (the lock key again for lua). ARGV[1] a value, ARGV[2] now in unix ms,
-- ARGV[3] '1' for a fenced lock. Defines `now`, `drop_dead`, `token`, `queue`.
local now = tonumber(ARGV[2])

-- The waiters at the head whose wait has ended are gone (their process died, or will remove them
-- itself): a dead waiter holds the line up for at most its own wait.
local function drop_dead()
  while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if not head then
      return
    end
    local e = redis.call('hget', KEYS[3], head)
    if e and tonumber(string.match(e, '^(%d+)')) > now then
      return
    end
    redis.call('lpop', KEYS[2])
    redis.call('hdel', KEYS[3], head)
  end
end

-- The token of a new holder: the next of the counter for a fenced lock, 0 for lua.
local function token()
  if ARGV[3] == '1' then
    return redis.call('incr', KEYS[4])
  end
  return 0
end

-- Put value in line (once) until deadline; both keys live at least until then.
local function queue(value, deadline, ttl)
  queue_once(KEYS[2], KEYS[3], value, deadline .. ':' .. ttl, tonumber(deadline) - now)
end

