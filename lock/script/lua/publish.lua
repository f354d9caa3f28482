-- publish.lua, an include: announce a message with classic pub/sub (PUBLISH). lock/script builds
-- each script that includes it twice: as written, and with spublish.lua in its place (the
-- sharded build, for Redis Cluster's sharded pub/sub).
--! requires (nothing)
--! defines publish

local function publish(channel, message)
  return redis.call('publish', channel, message)
end
