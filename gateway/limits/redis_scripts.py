"""The Lua scripts of the Redis limit counters: one call admits a turn over all its scopes,
one more settles it. Each runs atomically in Redis, so concurrent turns on any number of
gateway instances see admissions one at a time.

Times are integer milliseconds and money integer nano-dollars (Lua numbers are doubles:
exact to 2**53, i.e. 9 million USD of spend per counter). The window arithmetic is that of
:mod:`gateway.limits.window` (one-second buckets, a bucket counted while less than 61 s old).

Keys (``P`` the configured prefix; ``S`` a scope name such as ``key:k_1``):

* ``P b:S:PERIOD:START`` — hash ``s`` (spent), ``r`` (reserved), ``t`` (when its seed was read
  from the ledger, ms: a settle of a turn that ended before is not added again) and one field per reservation
  id holding its amount (``x:ID`` once its deadline passed unsettled); TTL one day past the
  period's end (none for ``total``). Settle is idempotent by these fields: it charges a
  reservation only while its field is there, and removes it.
* ``P bh:S:PERIOD:START`` — zset of the reservations above by deadline (ms): a holder that
  died stops holding budget when its deadline passes (swept at the next admission).
* ``P rpm:S``, ``P tpm:S`` — hash second -> count, plus ``n`` (the total), ``o`` (no bucket
  older) and ``l`` (the newest bucket); TTL 62 s after the last write.
* ``P c:S`` — zset reservation id -> deadline (ms): the concurrent turns; expired ones swept.
* ``P done:ID`` — a settled reservation that was admitted unchecked (fail open): it has no
  field to be idempotent by.

* ``P adm:ID`` — an admission taken (60 s): a call repeated after a lost answer takes
  nothing twice.

Admission ``KEYS``: ``P adm:ID``, then the checks' keys in order (a budget check has two:
hash, holds zset).
``ARGV``: ``now_ms, id, cost_nano, deadline_ms, n`` then per check five values: ``type``
(``b`` budget, ``q`` requests/min, ``t`` tokens/min, ``c`` concurrent), ``limit``, ``hard``
(1/0), ``ttl_ms`` (budget key TTL; 0: none), ``seed`` (``spent_nano:read_ms``: the budget's spent
to create a missing key with, and when the ledger was read; empty: unknown). Replies:

* ``{"seed", i...}``: budget checks ``i`` (1-based) have no key and no seed; nothing written.
* ``{"deny", "b", i, spent, reserved, 0}`` or ``{"deny", "r", i, used, retry_ms, reset_ms}``
  (``retry_ms`` -1: never): nothing taken.
* ``{"ok", {i, spent, reserved ...}, {i, total, reset_ms ...}}``: soft budgets past their
  cap, and each rate window's state after the admission.
"""

from __future__ import annotations

COMMON = """
-- A window hash holds 'n' (the total), 'o' (no bucket is older than this second), 'l' (the
-- newest bucket's second) and second -> count. Sweeping walks the seconds from 'o' up, so an
-- admission costs O(1) amortised, not one read of all 61 buckets.
local function window(key, now_ms)
  local floor = math.floor(now_ms / 1000) - 60
  local v = redis.call('HMGET', key, 'n', 'o', 'l')
  local total, oldest, latest = tonumber(v[1]) or 0, tonumber(v[2]), tonumber(v[3])
  if oldest == nil or latest == nil then return 0, nil end
  if latest < floor then
    redis.call('DEL', key)
    return 0, nil
  end
  if oldest < floor then
    if floor - oldest > 120 then  -- far behind (not in normal use): recount what is left
      total = 0
      local raw = redis.call('HGETALL', key)
      for j = 1, #raw, 2 do
        local sec = tonumber(raw[j])
        if sec then
          if sec < floor then redis.call('HDEL', key, raw[j]) else total = total + tonumber(raw[j + 1]) end
        end
      end
    else
      for sec = oldest, floor - 1 do
        local n = redis.call('HGET', key, tostring(sec))
        if n then
          total = total - tonumber(n)
          redis.call('HDEL', key, tostring(sec))
        end
      end
    end
    oldest = floor
    redis.call('HSET', key, 'n', total, 'o', oldest)
  end
  return total, {oldest, latest}
end

local function add(key, now_ms, n)
  -- count n now (a clock that stepped back counts into the newest bucket)
  local sec = math.floor(now_ms / 1000)
  local v = redis.call('HMGET', key, 'o', 'l')
  local oldest, latest = tonumber(v[1]), tonumber(v[2])
  if latest and latest > sec then sec = latest end
  redis.call('HINCRBY', key, tostring(sec), n)
  redis.call('HINCRBY', key, 'n', n)
  if oldest == nil then
    redis.call('HSET', key, 'o', sec, 'l', sec)
  elseif latest == nil or sec > latest then
    redis.call('HSET', key, 'l', sec)
  end
  redis.call('PEXPIRE', key, 62000)
end

local function retry_ms(key, total, span, need, limit, now_ms)
  local excess = total + need - limit
  if excess <= 0 then return 0 end
  if need > limit then return -1 end
  if span == nil then return 60000 end
  local freed = 0
  for sec = span[1], span[2] do
    local n = redis.call('HGET', key, tostring(sec))
    if n then
      freed = freed + tonumber(n)
      if freed >= excess then return math.max((sec + 61) * 1000 - now_ms, 0) end
    end
  end
  return 60000
end

local function reset_ms(span, now_ms)
  if span == nil then return 0 end
  return math.max((span[2] + 61) * 1000 - now_ms, 0)
end

local function sweep_holds(h, z, now_ms)
  local dead = redis.call('ZRANGEBYSCORE', z, '-inf', now_ms)
  for _, rid in ipairs(dead) do
    local amount = redis.call('HGET', h, rid)
    if amount then
      if amount ~= '0' then redis.call('HINCRBY', h, 'r', '-' .. amount) end
      redis.call('HDEL', h, rid)
      redis.call('HSET', h, 'x:' .. rid, 1)  -- its settle, if it ever comes, still charges
    end
  end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', z, '-inf', now_ms) end
end
"""

ADMIT = (
    COMMON
    + """
local now_ms, rid, cost = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local deadline, n = tonumber(ARGV[4]), tonumber(ARGV[5])
-- a retried call whose first run took its admission (the answer was lost) takes nothing again
if redis.call('EXISTS', KEYS[1]) == 1 then return {'ok', {}, {}} end
local checks, k = {}, 2
for i = 1, n do
  local a = 5 + (i - 1) * 5
  local c = {t = ARGV[a + 1], limit = tonumber(ARGV[a + 2]), hard = ARGV[a + 3] == '1',
             ttl = tonumber(ARGV[a + 4]), seed = ARGV[a + 5], key = KEYS[k]}
  if c.t == 'b' then c.holds = KEYS[k + 1]; k = k + 2 else k = k + 1 end
  checks[i] = c
end
-- 1. every budget counter exists (or is seeded now), else ask for seeds
local missing = {}
for i, c in ipairs(checks) do
  if c.t == 'b' and redis.call('EXISTS', c.key) == 0 then
    if c.seed == '' then missing[#missing + 1] = i end
  end
end
if #missing > 0 then
  table.insert(missing, 1, 'seed')
  return missing
end
for _, c in ipairs(checks) do
  if c.t == 'b' and c.seed ~= '' and redis.call('EXISTS', c.key) == 0 then
    -- the seed is 'spent_nano:read_ms': the ledger's spend and when it was read; a kept settle
    -- of a turn that ended before then is in that spend already (SETTLE does not add it again)
    local spent, at = string.match(c.seed, '^(%d+):(%d+)$')
    redis.call('HSET', c.key, 's', spent, 'r', 0, 't', at)
    if c.ttl > 0 then redis.call('PEXPIRE', c.key, c.ttl) end
  end
end
-- 2. check everything; nothing is taken unless all pass
local soft, states, rate_deny, busy = {}, {}, nil, nil
for i, c in ipairs(checks) do
  if c.t == 'b' then
    sweep_holds(c.key, c.holds, now_ms)
    local sr = redis.call('HMGET', c.key, 's', 'r')
    local spent, reserved = tonumber(sr[1] or '0'), tonumber(sr[2] or '0')
    if spent + reserved + cost > c.limit then
      if c.hard then
        -- spent past it: refused; full only of reservations in flight: the first such, unless
        -- another budget is spent past it
        if spent + cost > c.limit then return {'deny', 'b', i, spent, reserved, 0} end
        busy = busy or {'deny', 'b', i, spent, reserved, 0}
      else
        soft[#soft + 1] = i; soft[#soft + 1] = spent; soft[#soft + 1] = reserved
      end
    end
  elseif c.t == 'q' or c.t == 't' then
    local total, span = window(c.key, now_ms)
    local wait = retry_ms(c.key, total, span, 1, c.limit, now_ms)
    if wait ~= 0 then
      rate_deny = rate_deny or {'deny', 'r', i, total, wait, reset_ms(span, now_ms)}
    elseif c.t == 'q' then
      states[#states + 1] = i; states[#states + 1] = total + 1
      states[#states + 1] = (math.floor(now_ms / 1000) + 61) * 1000 - now_ms
    else
      states[#states + 1] = i; states[#states + 1] = total; states[#states + 1] = reset_ms(span, now_ms)
    end
  else
    redis.call('ZREMRANGEBYSCORE', c.key, '-inf', now_ms)
    local held = redis.call('ZCARD', c.key)
    if held >= c.limit then
      rate_deny = rate_deny or {'deny', 'r', i, held, c.limit > 0 and 1000 or -1, 0}
    end
  end
end
if busy then return busy end
if rate_deny then return rate_deny end
-- 3. take it
redis.call('SET', KEYS[1], '1', 'PX', 60000)
for _, c in ipairs(checks) do
  if c.t == 'b' then
    redis.call('HINCRBY', c.key, 'r', ARGV[3])  -- the string: a Lua number may print as 1e+14
    redis.call('HSET', c.key, rid, ARGV[3])
    redis.call('ZADD', c.holds, deadline, rid)
    local ttl = redis.call('PTTL', c.key)
    if ttl > 0 then redis.call('PEXPIRE', c.holds, ttl) end
  elseif c.t == 'q' then
    add(c.key, now_ms, 1)
  elseif c.t == 'c' then
    redis.call('ZADD', c.key, deadline, rid)
    redis.call('PEXPIRE', c.key, math.max(deadline - now_ms, 0) + 60000)
  end
end
return {'ok', soft, states}
"""
)

SETTLE = (
    COMMON
    + """
-- KEYS: done marker, then nb budget (hash, holds) pairs, nt tokens/min hashes, nl lease zsets
-- ARGV: id, now_ms, actual_nano, tokens, marker_ttl_ms (0: no marker), nb, nt, nl
local rid, now_ms, actual, tokens = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local marker, nb, nt, nl = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
-- a turn admitted unchecked (fail open) has no holds to tell whether it was settled: its marker does
if marker > 0 and not redis.call('SET', KEYS[1], '1', 'NX', 'PX', marker) then return 0 end
local fresh = nb == 0 or marker > 0
local k = 2
for _ = 1, nb do
  local h, z = KEYS[k], KEYS[k + 1]
  k = k + 2
  local mine = marker > 0
  local amount = redis.call('HGET', h, rid)
  if amount then
    if amount ~= '0' then redis.call('HINCRBY', h, 'r', '-' .. amount) end
    redis.call('HDEL', h, rid)
    redis.call('ZREM', z, rid)
    mine = true
  elseif redis.call('HDEL', h, 'x:' .. rid) == 1 then
    mine = true  -- its hold had expired (swept), but the turn did end: charge it
  end
  -- a counter that is gone (past its period, or Redis lost it) is not re-created without its
  -- seed: the ledger holds this turn and seeds it again
  if mine then
    fresh = true
    -- a counter seeded from the ledger after the turn ended holds its spend already ('t')
    local seeded = tonumber(redis.call('HGET', h, 't') or '0')
    if actual > 0 and redis.call('EXISTS', h) == 1 and now_ms >= seeded then
      redis.call('HINCRBY', h, 's', ARGV[3])
    end
  end
end
for _ = 1, nt do
  if fresh and tokens > 0 then add(KEYS[k], now_ms, tokens) end
  k = k + 1
end
for _ = 1, nl do
  redis.call('ZREM', KEYS[k], rid)
  k = k + 1
end
return fresh and 1 or 0
"""
)

PEEK = (
    COMMON
    + """
-- KEYS: requests/min hash, tokens/min hash, lease zset
-- ARGV: now_ms, rpm, tpm, concurrent (-1: not limited)
local now_ms = tonumber(ARGV[1])
for j = 1, 2 do
  local limit = tonumber(ARGV[j + 1])
  if limit >= 0 then
    local total = window(KEYS[j], now_ms)
    if total + 1 > limit then return 0 end
  end
end
local limit = tonumber(ARGV[4])
if limit >= 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now_ms)
  if redis.call('ZCARD', KEYS[3]) >= limit then return 0 end
end
return 1
"""
)
