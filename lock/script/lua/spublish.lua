-- spublish.lua, an include: announce a message with sharded pub/sub (SPUBLISH), in the sharded
-- build of a script that includes publish.lua (see there). The channel shares the lock's hash
-- tag, so it is in the script's slot, as SPUBLISH in a script requires.
--! requires (nothing)
--! defines publish

local function publish(channel, message)
  return redis.call('spublish', channel, message)
end
