-- The watches of WatchHolds, of every kind of hold: puts a watcher in a
-- primitive's watchers, scored by when its call began (its rank's time,
-- the client's ms: watchScore), which a watch renewed keeps: the watchers
-- are in the order their calls came, as a lock's line is. They live
-- ARGV[2] ms after the last watch.
-- KEYS[1]: key:watchers.
-- ARGV[1]: the watcher's member; ARGV[2]: the watchers' TTL in ms
-- (keyserver.LineTTL); ARGV[3]: the score.
-- Reply: 1.
enlist(KEYS[1], ARGV[1], ARGV[3], ARGV[2])
return 1
