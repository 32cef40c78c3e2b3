-- RaiseFence: sets the fence counter to ARGV[1] if it holds less (an
-- absent counter is 0). The counter has no TTL.
-- KEYS[1]: the fence counter (layout.FenceKey of the lock key).
-- ARGV[1]: the fence.
-- Reply: the counter as it was.
local prev = tonumber(redis.call('GET', KEYS[1]) or '0')
if prev < tonumber(ARGV[1]) then
	redis.call('SET', KEYS[1], ARGV[1])
end
return prev
