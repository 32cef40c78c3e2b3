-- Release: lets go of the lock key if it holds the token itself, marked
-- or not; never a promise to the token's call, which a failed attempt's
-- clean-up must not give away (see keyserver.Notifier). The key goes to
-- the first waiter in line, or is deleted when nobody waits.
-- KEYS[1]: the lock key; KEYS[2]: its line (keyserver.LineKey).
-- ARGV[1]: token; ARGV[2]: claim TTL in ms (keyserver.ClaimTTL);
-- ARGV[3]: a promise's length (keyserver.TokenLen), a number for
-- string.sub only once tonumber made it one: Redis's Lua takes a numeric
-- string there, gopher-lua (miniredis) fails with "bad argument #3 to sub".
-- Reply: 1, or 0 when another value holds the key or none does.
--
-- First the common case: a ranked token (49 bytes, '.' at 17, not ending
-- in '~' as a promise does) without the waiters' mark had nobody join its
-- line (see acquire_in_line.lua): deleted at once. The test is written
-- out and handOver defined past it, as a local function is a closure
-- made at every run: three cost this script a fifth of its time.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] and #v == 49 and string.byte(v, 17) == 46 and string.byte(v, -1) ~= 126 then
	redis.call('DEL', KEYS[1])
	return 1
end
if v ~= ARGV[1] and v ~= ARGV[1] .. '+' then
	return 0
end

-- handOver promises the key for claimTTL ms to the first waiter in line,
-- taking it out of line, and publishes the promise and the key on that
-- waiter's channel (a member is its promise, n bytes, then the channel);
-- with nobody in line it deletes the key. A user whose ACL denies PUBLISH
-- still hands over (pcall): the waiter finds its turn by trying again.
local function handOver(claimTTL, n)
	local next = redis.call('ZPOPMIN', KEYS[2])
	if next[1] then
		local promise = string.sub(next[1], 1, n)
		redis.call('SET', KEYS[1], promise, 'PX', claimTTL)
		pcall(redis.call, 'PUBLISH', string.sub(next[1], n + 1), promise .. KEYS[1])
	else
		redis.call('DEL', KEYS[1])
	end
end

handOver(ARGV[2], tonumber(ARGV[3]))
return 1
