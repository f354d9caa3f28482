-- drop_dead.lua, an include: the one rule by which every line kept in Redis passes over its dead
-- waiters (the line of lua, fenced and reentrant, line.lua; the fair lock's queue,
-- fair_queue.lua). A waiter whose wait has ended is gone: its process died, or will take it out
-- of line itself. So the waiters at the head whose deadline is not after now are dropped, and a
-- dead waiter holds the line up for at most its own wait.
-- What differs between the lines (where a deadline is kept, what leaves with a waiter) comes in
-- as functions:
--   first()      the waiter at the head (false or nil: the line is empty)
--   deadline(w)  w's deadline in unix ms; nil when it has none, or is known dead otherwise
--   pop(w)       takes w, the waiter at the head, off the line, with what is kept for it
-- drop_dead returns the first live waiter, or false when none is left.
--! requires (nothing)
--! defines drop_dead

local function drop_dead(first, deadline, pop, now)
  local w = first()
  while w do
    local d = deadline(w)
    if d and d > now then
      return w
    end
    pop(w)
    w = first()
  end
  return false
end
