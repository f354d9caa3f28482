-- Release of mode lua or fenced (line.go), which passes the lock on to one waiter only;
-- line_prelude.lua runs first. ARGV[1] the holder's value. ARGV[4] the releasing process's
-- prefix "<instance-id>:"; ARGV[5] the grant channel prefix; ARGV[6] the releasing process's next
-- waiter ('' : none), that is not in line yet, ARGV[7] its deadline ms, ARGV[8] its grant TTL ms,
-- ARGV[9] its lease ms; ARGV[10] '1' when that waiter may have the lock before the line (its
-- process's turn lasts: the cohort of line.go).
-- When the lock is ours: the first live waiter in line gets it (its value written with the TTL it
-- asked for) and is told on its process's grant channel "<prefix><instance-id>" with
-- "<lock>\n<value>\n<token>", unless it waits in the releasing process, which tells it itself;
-- the releasing process's next waiter joins the line behind. With nobody in line, or with
-- ARGV[10] '1', that next waiter gets it; with nobody at all the lock is deleted.
-- When the lock is not ours (a waiter that gives up, or a holder whose lock expired), the value
-- only leaves the line.
-- Returns {0} not ours; {1} deleted; {2, value, token} handed to the first in line;
-- {3, value, token} handed to the releasing process's next waiter ({3, value, token, 1} when
-- before the line, by ARGV[10], without looking whether anyone was in it).
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  if redis.call('hdel', KEYS[3], ARGV[1]) == 1 then
    redis.call('lrem', KEYS[2], 1, ARGV[1])
  end
  return {0}
end
if ARGV[10] == '1' and ARGV[6] ~= '' then
  redis.call('set', KEYS[1], ARGV[6], 'PX', ARGV[9])
  return {3, ARGV[6], token(), 1}
end
drop_dead()
local first = redis.call('lpop', KEYS[2])
if first then
  local e = redis.call('hget', KEYS[3], first)
  redis.call('hdel', KEYS[3], first)
  redis.call('set', KEYS[1], first, 'PX', string.match(e, ':(%d+)$'))
  local t = token()
  if ARGV[6] ~= '' and ARGV[6] ~= first then
    queue(ARGV[6], ARGV[7], ARGV[8])
  end
  if string.sub(first, 1, #ARGV[4]) ~= ARGV[4] then
    redis.call('publish', ARGV[5] .. string.match(first, '^([^:]+):'), KEYS[1] .. '\n' .. first .. '\n' .. t)
  end
  return {2, first, t}
end
if ARGV[6] ~= '' then
  redis.call('set', KEYS[1], ARGV[6], 'PX', ARGV[9])
  return {3, ARGV[6], token()}
end
redis.call('del', KEYS[1])
return {1}
