-- fair_queue.lua, an include: the fair lock's queue (Redisson's RFairLock: a list of waiting
-- fields, queue_key, and a zset of their deadlines, deadlines_key) as the acquire, heartbeat and
-- release scripts change it, beside this project's grant hash (grant_key: the waiters that take
-- a lock handed over from another process, field -> the TTL such a lock gets; Redisson clients
-- neither read nor write it).
--! include drop_dead.lua
--! include fair_lag.lua
--! include fair_alive.lua
--! requires lock_key, queue_key, deadlines_key, alive_key, grant_key, lag_key, lag_cap, now
--! defines drop_dead_waiters, keep_queue, take_lock

-- drop_dead_waiters drops the waiters at the head of the queue whose deadline has passed, or
-- whose process has stopped saying it is alive (fair_alive.lua), the rule of drop_dead.lua; the
-- first waiter's deadline is made exact before it is read (fair_lag.lua). It returns the ones
-- dropped for their deadline whose process is not known to be gone: live ones among them (the
-- holds ahead outlasted the deadlines Redisson's scripts wrote) are out of the line unaware, and
-- the scripts that publish tell them to look again.
local function drop_dead_waiters()
  local missed = {}
  local function first()
    return head
  end
  -- A waiter's deadline; none once its process is gone.
  local function deadline(field)
    local d = tonumber(redis.call('zscore', deadlines_key, field))
    if d and d > now and gone(field) then
      return nil
    end
    return d
  end
  local function pop(field)
    if not gone(field) then
      missed[#missed + 1] = field
    end
    pop_head()
    settle()
  end
  settle()
  drop_dead(first, deadline, pop, now)
  return missed
end

-- The queue and the deadlines expire with the last waiter's deadline (the latest one: a waiter
-- joins one thread wait after the one before it, and deadlines only move up after that). Past
-- it every waiter in them is dead and the next script would drop them all; so when every
-- waiter crashed, nothing of the line stays in Redis longer than that. The lag hash lives as
-- long as they do. Only these scripts give the three keys a TTL, and always the same one, so
-- the queue's tells all three. keep_queue: when they must live longer than ms, they get
-- ms + slack.
local function keep_queue(ms, slack)
  ms = math.max(ms, 1)
  if redis.call('pttl', queue_key) < ms then
    ms = ms + slack
    redis.call('pexpire', queue_key, ms)
    redis.call('pexpire', deadlines_key, ms)
    redis.call('pexpire', lag_key, ms)
  end
end

-- take_lock gives the free lock to field, first in line or with nobody waiting (RFairLock's
-- acquire): it leaves the queue, everyone behind moves up `by` ms, and it holds once for ttl ms.
-- The acquire takes it for itself, the release for the first waiter (a hand-over).
local function take_lock(field, by, ttl)
  if head == field then
    pop_head()
  else
    redis.call('zrem', deadlines_key, field)
    redis.call('hdel', grant_key, field)
  end
  move_up(by)
  save_lag()
  redis.call('hset', lock_key, field, 1)
  redis.call('pexpire', lock_key, ttl)
end
