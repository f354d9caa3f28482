-- fair_alive.lua, an include: this project's hash of the processes with waiters in a fair queue
-- (alive_key: instance id -> unix ms until which it is surely alive), the heartbeat that keeps a
-- dead process's waiters from holding the line up for their whole wait. A Redisson client is
-- never in the hash, so its waiters keep Redisson's deadlines. Included by fair_queue.lua.
--! requires alive_key, now
--! defines mark_alive, marks, gone

-- mark_alive says instance is alive until until_ms ('0': the caller says nothing, as a single
-- attempt that does not queue).
local function mark_alive(instance, until_ms)
  if until_ms ~= '0' then
    redis.call('hset', alive_key, instance, until_ms)
    -- Twice what a mark says: a heartbeat comes well before, and when none does (every process
    -- with waiters gone) the hash goes soon after.
    redis.call('pexpire', alive_key, 2 * (tonumber(until_ms) - now))
  end
end

-- The marks, read once when a waiter needs them (nil: not read yet).
local marks

-- gone reports whether field's process said it was alive and has not said so again in time: it
-- died (its last mark is past), so its waiters are dead whatever their deadlines.
local function gone(field)
  if marks == nil then
    marks = redis.call('hgetall', alive_key)
  end
  local best, until_ms = 0, nil
  for i = 1, #marks, 2 do
    local inst = marks[i]
    if #inst > best and string.sub(field, 1, #inst + 1) == inst .. ':' then
      best, until_ms = #inst, tonumber(marks[i + 1])
    end
  end
  return until_ms ~= nil and until_ms <= now
end
