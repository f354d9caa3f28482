-- nominate.lua, an include: what a release of NewReentrant does for its line (line.lua), shared
-- by rlock_release.lua and rlock_pass.lua. The lock is Redisson's hash, which a Java client's
-- release deletes without reading any line, so a release here does not hand it over either: it
-- deletes it, and names the first process in line, whose head alone then tries. It never
-- changes Redisson's keys: the lock hash, its unlock channel and message stay exactly Redisson's.
-- Each process listens on its own nomination channel "<nomination_prefix>:<id>".
--! include line.lua
--! include publish.lua
--! requires line_key, waiters_key, now, unlock_channel, nomination_prefix
--! defines nominate

-- nominate takes the first process still waiting off the line (the dead ones at the head are
-- dropped, line.lua) and tells it, on its own nomination channel: its head, and no other
-- process's, tries. Then Redisson's unlock message, whenever a client listens on the unlock
-- channel itself, which is how Redisson's waiters listen; this library's processes listen to it
-- by pattern, which PUBSUB NUMSUB does not count, so among them alone a release sends one message
-- in all. With sharded pub/sub ('1': no patterns) it always goes out.
local function nominate(unlock_message, sharded)
  local id = first_live()
  if id then
    leave(id)
    publish(nomination_prefix .. ':' .. id, '1')
  end
  if sharded == '1' or redis.call('pubsub', 'numsub', unlock_channel)[2] > 0 then
    publish(unlock_channel, unlock_message)
  end
end
