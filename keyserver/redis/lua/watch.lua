-- The watches of WatchPermits, WatchHolds and WatchLeader: puts a
-- watcher in a primitive's watchers, scored by the server's time of its
-- last watch (ms), which tells a live watcher from a dead one. The
-- watchers live ARGV[2] ms after the last one came.
-- KEYS[1]: key:watchers.
-- ARGV[1]: the watcher's member (its promise, then its Server's channel);
-- ARGV[2]: the watchers' TTL in ms (keyserver.LineTTL).
-- Reply: 1.
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
