-- queue_once.lua, an include: putting a member in a line once, and keeping keys alive.
--! requires (nothing)
--! defines live_at_least, queue_once

-- live_at_least pushes the TTL of each of keys out to ms from now, never in; a key it pushes gets
-- slack ms more (nil: none), so that the next callers with about the same ms need not push again.
local function live_at_least(ms, keys, slack)
  for _, k in ipairs(keys) do
    if redis.call('pttl', k) < ms then
      redis.call('pexpire', k, ms + (slack or 0))
    end
  end
end

-- queue_once puts member at the tail of list, once (a member already there keeps its place),
-- with value under member in hash; both keys live at least left ms.
local function queue_once(list, hash, member, value, left)
  if redis.call('hset', hash, member, value) == 1 then
    redis.call('rpush', list, member)
  end
  live_at_least(left, {list, hash})
end
