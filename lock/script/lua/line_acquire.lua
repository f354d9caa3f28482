-- One attempt of a waiter of mode lua or fenced (line.go); line_prelude.lua runs first.
-- ARGV[4] lease ms; ARGV[5] the waiter's deadline in unix ms (0: a single attempt, do not queue);
-- ARGV[6] the TTL a lock handed to it gets (min(lease, its wait): what a dead waiter costs).
-- Takes the lock when it is free and nobody waits before this waiter. Returns {1, token} when held
-- (also when a release had already handed it over and its message is still on the way: then its
-- TTL is set to the lease); else {0, ms}: how long until it is worth looking again (the lock's
-- PTTL, or, when the lock is free but a live waiter is first, until that waiter's wait ends; at
-- most the grant TTL of the first waiter).
local cur = redis.call('get', KEYS[1])
if cur == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[4])
  local t = 0
  if ARGV[3] == '1' then
    t = tonumber(redis.call('get', KEYS[4]) or '0')
  end
  return {1, t}
end
drop_dead()
local head = redis.call('lindex', KEYS[2], 0)
if (not cur) and ((not head) or head == ARGV[1]) then
  if head then
    redis.call('lpop', KEYS[2])
    redis.call('hdel', KEYS[3], head)
  end
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[4])
  return {1, token()}
end
if ARGV[5] ~= '0' then
  queue(ARGV[1], ARGV[5], ARGV[6])
end
local ms
if cur then
  ms = redis.call('pttl', KEYS[1])
else
  ms = tonumber(string.match(redis.call('hget', KEYS[3], head), '^(%d+)')) - now
end
-- A lock handed to the first waiter lives its grant TTL if that waiter is dead: look again by
-- then, so a dead waiter costs its own wait, not the time this one would sleep.
if head and head ~= ARGV[1] and ms >= 0 then
  ms = math.min(ms, tonumber(string.match(redis.call('hget', KEYS[3], head), ':(%d+)$')))
end
return {0, ms}
