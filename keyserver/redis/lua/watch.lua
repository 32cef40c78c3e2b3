-- The watches of WatchPermits, WatchHolds and WatchLeader: puts a
-- watcher in a primitive's watchers, which live ARGV[2] ms after the last
-- one came.
-- KEYS[1]: key:watchers.
-- ARGV[1]: the watcher's member (its promise, then its Server's channel);
-- ARGV[2]: the watchers' TTL in ms (keyserver.LineTTL).
-- Reply: 1.
redis.call('ZADD', KEYS[1], 0, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
