-- AcquireHold of a WriteHold or WaitingWriteHold: stores the token as the
-- writer if nobody holds the lock and no other writer is promised it; a
-- refused caller that will wait marks a writer waiting (no new readers).
-- The writer's key is set first and taken back if refused: one command
-- less when free.
-- KEYS[1]: key:w, the writer's token; KEYS[2]: key:r, the readers
-- (addReader); KEYS[3]: key:wait, the mark of the writer that waited
-- last; KEYS[4]: key:watchers; KEYS[5]: key:told (release_permit.lua).
-- ARGV[1]: token; ARGV[2]: TTL in ms; ARGV[3]: '1' if the caller will
-- wait, else '0'; ARGV[4]: its mark (layout.WaiterOf); ARGV[5]: the
-- mark's TTL in ms (keyserver.WriterWaitTTL); ARGV[6]: the caller's
-- watcher member, or ''; ARGV[7]: the caller's promise
-- (layout.PromiseOf), or '' (no rank).
-- Reply: {1, 0} when granted, else {0, TTL left in ms (at least 1)}.

-- refuse is a write's refusal with left, marking the writer waiting in
-- key:wait when ARGV[3] is '1' (mark ARGV[4] for ARGV[5] ms).
local function refuse(left)
	if ARGV[3] == '1' then
		redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5])
	end
	return {0, math.max(left, 1)}
end

if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	if redis.call('GET', KEYS[1]) ~= ARGV[1] then
		return refuse(redis.call('PTTL', KEYS[1]))
	end
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	unwatch(KEYS[4], ARGV[6])
	return {1, 0}
end
if redis.call('EXISTS', KEYS[2], KEYS[3], KEYS[5]) > 0 then
	-- A live promise to another writer keeps the lock for it; a watcher
	-- whose promise lapsed leaves the watchers (see release_hold.lua).
	local got = redis.call('MGET', KEYS[3], KEYS[5])
	local mark, promised, now = got[1], got[2], nil
	if promised then
		now = clock()
		for m, d in string.gmatch(promised, '(%S+) (%d+),') do
			if tonumber(d) <= now then
				redis.call('ZREM', KEYS[4], m)
			elseif string.sub(m, 1, TOKEN) ~= ARGV[7] then
				redis.call('DEL', KEYS[1])
				return refuse(tonumber(d) - now)
			end
		end
	end
	local n, left = readers(now)
	if n > 0 then
		redis.call('DEL', KEYS[1])
		return refuse(left)
	end
	if mark == ARGV[4] then
		redis.call('DEL', KEYS[3])
	end
	if promised then
		redis.call('DEL', KEYS[5])
	end
end
unwatch(KEYS[4], ARGV[6])
return {1, 0}
