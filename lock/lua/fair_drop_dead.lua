-- Fair lock prelude, run first by the acquire and the release scripts (prepended to each): the
-- waiters at the head of the queue whose deadline has passed are gone, so drop them.
-- KEYS[2] queue "redisson_lock_queue:{<name>}"; KEYS[3] deadlines "redisson_lock_timeout:{<name>}";
-- ARGV[4] now, unix ms. Defines `now`.
local now = tonumber(ARGV[4])
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if head == false then
    break
  end
  local deadline = tonumber(redis.call('zscore', KEYS[3], head))
  if deadline ~= nil and deadline > now then
    break
  end
  redis.call('zrem', KEYS[3], head)
  redis.call('lpop', KEYS[2])
end

