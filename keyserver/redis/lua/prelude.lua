-- The helpers the scripts share. newScript (lua.go) puts before a script
-- the numbers Go knows (luaConstants), then the helpers it calls and
-- theirs, without comments; each calls only those above it. Members of
-- lines and watchers are promises (layout.PromiseOf), then a channel.

-- clock is the server's time in ms.
local function clock()
	local t = redis.call('TIME')
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- plain reports whether v is a ranked token (TOKEN bytes, '.' at 17)
-- that is no promise (those end in '~', 126) and has no waiters' mark.
local function plain(v)
	return #v == TOKEN and string.byte(v, 17) == 46 and string.byte(v, -1) ~= 126
end

-- rank is layout.RankOf of a value, less the waiters' mark ('+', 43).
local function rank(t)
	if #t == TOKEN + 1 and string.byte(t, -1) == 43 then
		t = string.sub(t, 1, TOKEN)
	end
	if #t == TOKEN and string.byte(t, 17) == 46 then
		return string.sub(t, 1, RANK)
	end
end

-- holder is a refusal's reply {left, order, ahead} (decodeHolder): left
-- is the PTTL of key, which v holds, at least 1 (a key under a ms from
-- expiry still exists), 0 for a key without one; order compares v's rank
-- with the caller's (ARGV[1]) as keyserver.Compare does (-1, 0 or 1).
local function holder(key, v, ahead)
	local h, c, order = rank(v), rank(ARGV[1]), 0
	if h and c and h ~= c then
		order = h < c and -1 or 1
	end
	local left = redis.call('PTTL', key)
	return {left < 0 and 0 or math.max(left, 1), order, ahead}
end

-- undo deletes the keys of a set (KEYS, every step-th) that a run stored
-- (olds[i] false) before the key refused.
local function undo(olds, refused, step)
	local stored = {}
	for i = 1, refused - 1 do
		if not olds[i] then
			stored[#stored + 1] = KEYS[1 + step * (i - 1)]
		end
	end
	if #stored > 0 then
		redis.call('DEL', unpack(stored))
	end
end

-- take is acquire.lua's rule for key: it returns false when the key is
-- the caller's, else the value that holds it.
local function take(key)
	local v = redis.call('SET', key, ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
	if v and (v == ARGV[1] or v == ARGV[3] or v == ARGV[1] .. '+') then
		if v ~= ARGV[1] then
			v = ARGV[1] .. '+'
		end
		redis.call('SET', key, v, 'PX', ARGV[2])
		v = false
	end
	return v
end

-- join puts member in line, key's, renewing its TTL to ttl ms unless ttl
-- is false, and returns how many wait ahead of it. A new waiter first in
-- line publishes on the key's contention channel, where the holder may
-- watch (Server.WatchContention); later ones need not: the holder's
-- watch looks at the line once it is subscribed.
local function join(key, line, member, ttl)
	local joined = redis.call('ZADD', line, 0, member)
	if ttl then
		redis.call('PEXPIRE', line, ttl)
	end
	local at = redis.call('ZRANK', line, member)
	if joined == 1 and at == 0 then
		pcall(redis.call, 'PUBLISH', 'goredlock:contended:' .. key, '')
	end
	return at
end

-- tell publishes member m's promise and name (which names the turn) on
-- m's channel. A user whose ACL denies PUBLISH still writes (pcall): the
-- waiter finds its turn by trying again.
local function tell(m, name)
	pcall(redis.call, 'PUBLISH', string.sub(m, TOKEN + 1), string.sub(m, 1, TOKEN) .. name)
end

-- handOver promises key for claim ms to the first waiter in line, taking
-- it out of line, and tells it; with nobody in line it deletes the key.
local function handOver(key, line, claim)
	local m = redis.call('ZPOPMIN', line)[1]
	if m then
		redis.call('SET', key, string.sub(m, 1, TOKEN), 'PX', claim)
		tell(m, key)
	else
		redis.call('DEL', key)
	end
end

-- tellAll tells every watcher of wkey, and deletes it.
local function tellAll(wkey)
	local ms = redis.call('ZRANGE', wkey, 0, -1)
	if #ms > 0 then
		redis.call('DEL', wkey)
		for _, m in ipairs(ms) do
			tell(m, ARGV[#ARGV])
		end
	end
end

-- live returns the promises in key:told still live at now, but skip's,
-- and the set of watchers told; one whose promise lapsed leaves wkey.
local function live(told, wkey, now, skip)
	local kept, out = '', {}
	for m, d in string.gmatch(told, '(%S+) (%d+),') do
		if m ~= skip and tonumber(d) > now then
			kept = kept .. m .. ' ' .. d .. ','
		elseif m ~= skip then
			redis.call('ZREM', wkey, m)
		end
		out[m] = true
	end
	return kept, out
end

-- passOn tells the earliest watcher in ws (wkey's) not in out: a reader
-- (READER ends its promise) with every other, as readers share, all taken
-- out; one without a rank (UNRANKED) taken out; any other promised the
-- turn for claim ms. tkey (key:told) then holds the promises for ttl ms.
local function passOn(ws, out, kept, now, wkey, tkey, claim, ttl)
	for _, m in ipairs(ws) do
		if not out[m] then
			if string.byte(m, TOKEN) == READER then
				redis.call('DEL', wkey, tkey)
				for _, r in ipairs(ws) do
					if not out[r] then
						tell(r, ARGV[#ARGV])
					end
				end
				return
			end
			if string.byte(m, 1) == UNRANKED then
				redis.call('ZREM', wkey, m)
			else
				kept = kept .. m .. ' ' .. string.format('%d', now + tonumber(claim)) .. ','
			end
			tell(m, ARGV[#ARGV])
			break
		end
	end
	if kept == '' then
		redis.call('DEL', tkey)
	else
		redis.call('SET', tkey, kept, 'PX', ttl)
	end
end

-- enlist puts member m unless '' in wkey, a primitive's watchers, with
-- score, for ttl ms more: a watch, or a waiter's give-back (unwatch).
local function enlist(wkey, m, score, ttl)
	if m ~= '' then
		redis.call('ZADD', wkey, score, m)
		redis.call('PEXPIRE', wkey, ttl)
	end
end

-- unwatch takes a granted caller, member m unless '', out of wkey.
local function unwatch(wkey, m)
	if m ~= '' then
		redis.call('ZREM', wkey, m)
	end
end

-- held records a semaphore's slot taken or renewed for ttl ms: the count
-- (KEYS[1], set if absent) lives as long, and a slot past MAX_INSPECTED
-- goes in key:held scored by when it lapses, so that Inspect counts it.
local function held(slot, ttl, stored, count)
	if stored then
		redis.call('PEXPIRE', KEYS[1], ttl, 'GT')
	else
		redis.call('SET', KEYS[1], count, 'PX', ttl)
	end
	if tonumber(slot) < MAX_INSPECTED then
		return
	end
	local idx = KEYS[1] .. ':held'
	local now = clock()
	redis.call('ZREMRANGEBYSCORE', idx, '-inf', now)
	local fresh = redis.call('EXISTS', idx) == 0
	redis.call('ZADD', idx, now + tonumber(ttl), slot)
	if fresh then
		redis.call('PEXPIRE', idx, ttl)
	else
		redis.call('PEXPIRE', idx, ttl, 'GT')
	end
end

-- addReader adds or renews the token ARGV[1] as a reader for ARGV[2] ms,
-- scored by its expiry in key:r (KEYS[2]), which lives as long as its
-- last reader (PEXPIRE NX, else GT).
local function addReader()
	redis.call('ZADD', KEYS[2], clock() + tonumber(ARGV[2]), ARGV[1])
	if redis.call('PEXPIRE', KEYS[2], ARGV[2], 'NX') == 0 then
		redis.call('PEXPIRE', KEYS[2], ARGV[2], 'GT')
	end
end

-- readers reports whether a live reader is left in key:r (KEYS[2]; 1 or
-- 0), with the shortest TTL left, dropping expired ones; now is the
-- server's time if read already. With no reader it costs one command.
local function readers(now)
	local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
	if not first[2] then
		return 0, 0
	end
	now = now or clock()
	if tonumber(first[2]) <= now then
		redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
		first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
		if not first[2] then
			return 0, 0
		end
	end
	return 1, tonumber(first[2]) - now
end
