-- Fair lock heartbeat, after fair_alive.lua, fair_lag.lua and fair_drop_dead.lua: the caller's
-- process said it is alive and the dead waiters at the head are gone. KEYS[1] lock name; KEYS[2]
-- queue; KEYS[3] deadlines; KEYS[4] the alive hash; KEYS[5] the grant hash; KEYS[6] the lag hash;
-- ARGV[4] now; ARGV[5] instance id; ARGV[6] alive until; ARGV[7] the lag cap.
-- Returns {first, pttl}: the first waiter ('' when none) and the lock's PTTL (-2: free, and the
-- first waiter may take it: its process rings it).
save_lag()
return {head or '', redis.call('pttl', KEYS[1])}
