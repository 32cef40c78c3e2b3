-- AcquireAllInLine: acquire_all.lua for a set that waits its turn in its
-- keys' lines (keyserver.SetLocker): granted, the caller leaves every
-- line; refused, it joins the line of each key another value holds, and
-- keeps the keys promised to it (and takes over those promised to a later
-- rank), unless a key promised to an earlier rank refused it: it then
-- gives each up to the first of its line, if that one ranks earlier.
-- KEYS: the lock keys, each followed by its line (one Cluster slot).
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: the caller's promise;
-- ARGV[4]: its line member; ARGV[5]: the line's TTL in ms
-- (keyserver.LineTTL), also a kept promise's; ARGV[6]: claim TTL in ms
-- (layout.ClaimTTL).
-- Reply: as acquire_in_line.lua's, and then promised: a '1' for each key
-- kept promised to the caller, else '0'.
local mine, marked, promise, member = ARGV[1], ARGV[1] .. '+', ARGV[3], ARGV[4]
local n = #KEYS / 2
local olds, refused, promised = {}, nil, {}
for i = 1, n do
	local k, v = KEYS[2 * i - 1], nil
	promised[i] = '0'
	if refused then
		v = redis.call('GET', k)
	else
		v = redis.call('SET', k, mine, 'NX', 'PX', ARGV[2], 'GET')
		-- A promise to a later rank is the caller's to take (see below).
		if v and v ~= mine and v ~= marked and v ~= promise and not (#v == TOKEN and string.byte(v, -1) == 126 and v > promise) then
			refused = i
		end
	end
	olds[i] = v or false
end

if not refused then
	-- Granted: marked, as others may wait in the lines it leaves.
	for i = 1, n do
		redis.call('SET', KEYS[2 * i - 1], marked, 'PX', ARGV[2])
		redis.call('ZREM', KEYS[2 * i], member)
	end
	return 1
end

undo(olds, refused, 2)

-- The lines of the keys others hold: joined (or the place kept), the
-- holder marked (see release.lua). A promise to an earlier rank makes the
-- caller yield.
local yield, ahead, kept = false, 0, {}
for i = 1, n do
	local v, k, line = olds[i], KEYS[2 * i - 1], KEYS[2 * i]
	if v and #v == TOKEN and string.byte(v, -1) == 126 and v > promise then
		-- Promised to a later rank, which would keep it while it waits:
		-- the caller takes the promise over, so that a later rank never
		-- holds up an earlier one.
		redis.call('SET', k, promise, 'PX', ARGV[5])
		kept[#kept + 1] = i
	elseif v == promise then
		kept[#kept + 1] = i
	elseif v and v ~= mine and v ~= marked then
		local at = join(k, line, member, ARGV[5])
		if i == refused then
			ahead = at
		end
		if #v == TOKEN and string.byte(v, 17) == 46 then
			if string.byte(v, -1) ~= 126 then
				redis.call('SET', k, v .. '+', 'KEEPTTL')
			elseif v < promise then
				yield = true
			end
		end
	end
end

-- The keys promised to the caller: renewed, or, when it yields, handed
-- over to the first of the line (never to a later rank), the caller
-- joining the line again.
for _, i in ipairs(kept) do
	local k, line = KEYS[2 * i - 1], KEYS[2 * i]
	local first = yield and redis.call('ZRANGE', line, 0, 0)[1]
	if first and string.sub(first, 1, TOKEN) < promise then
		handOver(k, line, ARGV[6])
		redis.call('ZADD', line, 0, member)
		redis.call('PEXPIRE', line, ARGV[5])
	else
		redis.call('PEXPIRE', k, ARGV[5])
		promised[i] = '1'
	end
end
local r = holder(KEYS[2 * refused - 1], olds[refused], ahead)
r[4] = table.concat(promised)
return r
