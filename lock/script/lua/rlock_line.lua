-- rlock_line.lua, an include: the nomination line of NewReentrant (lock/nomination.go), shared by
-- rlock_enlist.lua, rlock_pass.lua and rlock_release.lua. It sits beside Redisson's keys and never
-- changes them: the lock hash, its unlock channel and message stay exactly Redisson's. The line is
-- a list of process ids in the order they queued (a process is in it once, while it has waiters),
-- beside a hash id -> deadline in unix ms; each process listens on its own nomination channel
-- "<nomination_prefix>:<id>".
--! include queue_once.lua
--! include drop_dead.lua
--! include publish.lua
--! requires line_key, waiting_key, unlock_channel, nomination_prefix, now
--! defines enlist, nominate

-- enlist puts process id in line (once, keeping its place) until deadline; both keys live at
-- least until then.
local function enlist(id, deadline)
  queue_once(line_key, waiting_key, id, deadline, tonumber(deadline) - now)
end

-- nominate takes the first process still waiting off the line (the dead ones at the head are
-- dropped, drop_dead.lua) and tells it, on its own nomination channel: its head, and no other
-- process's, tries. Then Redisson's unlock message, whenever a client listens on the unlock
-- channel itself, which is how Redisson's waiters listen; this library's processes listen to it
-- by pattern, which PUBSUB NUMSUB does not count, so among them alone a release sends one message
-- in all. With sharded pub/sub ('1': no patterns) it always goes out.
local function nominate(unlock_message, sharded)
  local function first()
    return redis.call('lindex', line_key, 0)
  end
  local function deadline(id)
    return tonumber(redis.call('hget', waiting_key, id))
  end
  local function leave(id)
    redis.call('lpop', line_key)
    redis.call('hdel', waiting_key, id)
  end
  local id = drop_dead(first, deadline, leave, now)
  if id then
    leave(id)
    publish(nomination_prefix .. ':' .. id, '1')
  end
  if sharded == '1' or redis.call('pubsub', 'numsub', unlock_channel)[2] > 0 then
    publish(unlock_channel, unlock_message)
  end
end
