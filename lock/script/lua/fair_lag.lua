-- fair_lag.lua, an include: the fair lock's move-ups, deferred; shared by every fair script
-- (fair_acquire.lua, fair_beat.lua, fair_release.lua, fair_cancel.lua).
-- Redisson moves every waiter's deadline up by the taker's thread wait on each acquisition, one
-- write per waiter: with a few hundred waiters that costs Redis more than the sale itself. Here
-- only the first waiter's deadline is kept exact; everyone behind it owes the same amount, `lag`
-- ms, written to the deadlines only once it passes lag_cap (86400000, a day, or 0 when Redisson
-- clients share the queue, so every move-up is written at once, as Redisson's own scripts do; see
-- WithThreadWait). One number is enough because every move-up and every give-up changes
-- everyone behind the head alike, and a waiter who joins chains from the waiter before it, so it
-- owes what that one owes.
-- This holds only while these scripts are the only ones that change the queue: a Redisson client's
-- scripts (a thread that gives up and queues again under the same field, say) can leave a waiter
-- that this bookkeeping thinks owes the lag without owing it, and its deadline would come early.
-- So with Redisson clients on the same queue lag_cap is 0.
-- The lag hash (lag_key, this project's) holds x the lag, h the waiter whose deadline is exact,
-- t the last waiter when one of these scripts last ran. Every script reads the queue's head once
-- (here, where it is included) and writes the lag once, at its end (save_lag), and only when it
-- changed: a sale is two of these scripts, so each call here costs every sale.
--! requires queue_key, deadlines_key, grant_key, lag_key, lag_cap
--! defines lag, lag_head, tail, saved, head, owed, settle, look_head, pop_head, move_up, save_lag
-- lag is what every waiter behind lag_head owes (ms); lag_head the waiter whose deadline is exact;
-- tail the last waiter, read when first needed (nil: not read yet; false: none); saved the lag
-- hash as read, so save_lag writes only a change; head the first waiter (false: none), read here
-- and kept by pop_head and look_head.

local lag, lag_head, tail, saved
do
  local state = redis.call('hmget', lag_key, 'x', 'h', 't')
  lag, lag_head = tonumber(state[1]) or 0, state[2] or ''
  -- The last waiter we knew has left through a script that is not ours (a Redisson client's):
  -- who joined after it, and what they owe, cannot be told, so they owe nothing (late, not
  -- early). It is still the tail in the common case (every script reads the tail anyway), and a
  -- waiter in the queue is in the deadlines too; only otherwise is its deadline looked up.
  if lag > 0 and state[3] then
    tail = redis.call('lindex', queue_key, -1)
    if tail ~= state[3] and redis.call('zscore', deadlines_key, state[3]) == false then
      lag = 0
    end
  end
  saved = {lag, lag_head, state[3] or false}
end
local head = redis.call('lindex', queue_key, 0)

-- owed is what waiter m (in the queue) owes.
local function owed(m)
  if m == lag_head then
    return 0
  end
  return lag
end

-- settle makes the first waiter's deadline exact (another client, or a pop here, may have put a
-- new waiter first).
local function settle()
  if head == false then
    lag, lag_head = 0, ''
  elseif head ~= lag_head then
    if lag > 0 then
      redis.call('zincrby', deadlines_key, -lag, head)
    end
    lag_head = head
  end
end

-- look_head reads the first waiter again, after the queue changed other than by pop_head.
local function look_head()
  head = redis.call('lindex', queue_key, 0)
  tail = nil
end

-- pop_head takes the first waiter off the queue, its deadline and its grant with it.
local function pop_head()
  redis.call('lpop', queue_key)
  redis.call('zrem', deadlines_key, head)
  redis.call('hdel', grant_key, head)
  if head == tail then
    tail = false
  end
  head = redis.call('lindex', queue_key, 0)
end

-- move_up: the first waiter has just left the queue with the lock, so everyone moves up `by` ms
-- (Redisson's rule): the new first waiter now, the others in `lag`.
local function move_up(by)
  if head == false then
    lag, lag_head = 0, ''
    return
  end
  -- The new first waiter's deadline becomes exact (it owed the lag) and moves up.
  redis.call('zincrby', deadlines_key, -(lag + by), head)
  lag_head = head
  lag = lag + by
  if lag > lag_cap then
    local w = redis.call('zrange', deadlines_key, 0, -1, 'WITHSCORES')
    for i = 1, #w, 1000 do
      local args = {}
      for j = i, math.min(i + 999, #w), 2 do
        if w[j] ~= lag_head then
          args[#args + 1] = tonumber(w[j + 1]) - lag
          args[#args + 1] = w[j]
        end
      end
      if #args > 0 then
        redis.call('zadd', deadlines_key, 'XX', unpack(args))
      end
    end
    lag = 0
  end
end

-- save_lag keeps the lag for the next script, for as long as the queue lives; it writes only
-- what changed.
local function save_lag()
  settle()
  if head == false then
    if saved[3] then
      redis.call('del', lag_key)
    end
    return
  end
  if tail == nil then
    tail = redis.call('lindex', queue_key, -1)
  end
  if head == tail then
    lag = 0
  end
  if lag == saved[1] and lag_head == saved[2] and tail == saved[3] then
    return
  end
  if redis.call('hset', lag_key, 'x', lag, 'h', lag_head, 't', tail) > 0 then
    -- A new hash: it lives as long as the queue (fair_queue.lua's keep_queue keeps them alike
    -- from then on).
    local ttl = redis.call('pttl', queue_key)
    if ttl < 0 then
      ttl = lag_cap
    end
    redis.call('pexpire', lag_key, math.max(ttl, 1))
  end
end
