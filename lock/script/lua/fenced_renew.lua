-- The fenced lock's watchdog renewal: push the expiry out only while the key still holds our value,
-- so a holder whose lock expired (and was taken by someone else) never extends the new holder's lock.
-- KEYS[1] lock key; ARGV[1] holder's value, ARGV[2] lease ms. Returns 1 when renewed, 0 when not ours.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
