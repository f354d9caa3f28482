-- Fair lock prelude, run first by the acquire and the release scripts (prepended to each): the
-- waiters at the head of the queue whose deadline has passed, or whose process has stopped
-- saying it is alive (fair_alive.lua), are gone, so drop them.
-- KEYS[2] queue "redisson_lock_queue:{<name>}"; KEYS[3] deadlines "redisson_lock_timeout:{<name>}";
-- ARGV[4] now, unix ms. The key before the last is this project's own hash of the waiters that
-- take a lock handed over from another process (field -> the TTL such a lock gets); Redisson
-- clients neither read nor write it. fair_lag.lua runs before this (the first waiter's deadline
-- is exact, see there). Defines `now`, `keep_queue` and `take_lock`. The lag is saved at the end of each script.
local now = tonumber(ARGV[4])

-- The processes that said they are alive, and until when (fair_alive.lua), read once when a head
-- needs them.
local alive
-- gone reports whether field's process said it was alive and has not said so again in time: it
-- died (its last heartbeat is past), so its waiters are dead whatever their deadlines.
local function gone(field)
  if alive == nil then
    alive = redis.call('hgetall', ALIVE)
  end
  local best, until_ms = 0, nil
  for i = 1, #alive, 2 do
    local inst = alive[i]
    if #inst > best and string.sub(field, 1, #inst + 1) == inst .. ':' then
      best, until_ms = #inst, tonumber(alive[i + 1])
    end
  end
  return until_ms ~= nil and until_ms <= now
end

settle()
while head ~= false do
  local deadline = tonumber(redis.call('zscore', KEYS[3], head))
  if deadline ~= nil and deadline > now and not gone(head) then
    break
  end
  pop_head()
  settle()
end


-- The queue and the deadlines expire with the last waiter's deadline (the latest one: a waiter
-- joins one thread wait after the one before it, and deadlines only move up after that). Past
-- it every waiter in them is dead and the next script would drop them all; so when every
-- waiter crashed, nothing of the line stays in Redis longer than that. The lag hash lives as
-- long as they do. Only these scripts give the three keys a TTL, and always the same one, so
-- the queue's tells all three. When they must live longer than ms, they get ms + slack.
local function keep_queue(ms, slack)
  ms = math.max(ms, 1)
  if redis.call('pttl', KEYS[2]) < ms then
    ms = ms + slack
    redis.call('pexpire', KEYS[2], ms)
    redis.call('pexpire', KEYS[3], ms)
    redis.call('pexpire', LAG, ms)
  end
end

-- take_lock gives the free lock to field, first in line or with nobody waiting (RFairLock's
-- acquire): it leaves the queue, everyone behind moves up `by` ms, and it holds once for ttl ms.
-- The acquire takes it for itself, the release for the first waiter (a hand-over).
local function take_lock(field, by, ttl)
  if head == field then
    pop_head()
  else
    redis.call('zrem', KEYS[3], field)
    redis.call('hdel', GRANT, field)
  end
  move_up(by)
  save_lag()
  redis.call('hset', KEYS[1], field, 1)
  redis.call('pexpire', KEYS[1], ttl)
end
