-- The floor: a fixed-window counter as the peers' Redis stores keep one. INCR the key, read its PTTL, and
-- give it the window's PEXPIRE (ARGV[1], ms) when it has none yet, in one script call (hono-rate-limiter's
-- RedisStore; express-rate-limit's rate-limit-redis sends the same two commands a call, PTTL first). It
-- decides nothing: the caller compares the count with its limit. Run by bench/src/script-cost.ts (Redis's
-- cost per call) and bench/scripts/lone-check.mjs --floor (the client's).
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
  ttl = tonumber(ARGV[1])
end
return { hits, ttl }
