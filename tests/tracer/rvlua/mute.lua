-- The tracer's budget (RV_TRACE_MUTE=on): tiny() runs millions of times a
-- second for a few dozen ns each, long enough (0.5 s of CPU) for the mute
-- thread to mute it; afterwards its muted frames go through every exit path
-- rvlua has (tail call, error unwinding, coroutine yield and resume) and the
-- capture must stay balanced.  slow_one spins twice the hot loop's CPU time
-- (printed as spun=; test_rvlua.sh names lines by number: keep them).
-- HOT_SECONDS (default 0.5) shortens the hot loop for a run without muting,
-- whose every call must fit the ring.  Why hot_loop does arithmetic: below.
local calls = 0
local function tiny(x, how)
	calls = calls + 1
	if how then
		return how(x)
	end
	return x + 1
end
local function via_tail(x)
	return tiny(x)
end
local function hot_loop(seconds)
	local s, t0 = 0, os.clock()
	repeat
		for _ = 1, 100000 do
			for k = 1, 24 do s = (s + k) % 65521 end s = tiny(s)
		end
	until os.clock() - t0 > seconds
	return s, os.clock() - t0
end
local function slow_one(seconds)
	local h, t0 = 0, os.clock()
	repeat
		for i = 1, 100000 do
			h = (h + i * i) % 65521
		end
	until os.clock() - t0 > seconds
	return h
end
local s, took = hot_loop(tonumber(os.getenv("HOT_SECONDS")) or 0.5)
for _ = 1, 1000 do
	s = via_tail(s) for k = 1, 20000 do s = (s + k) % 65521 end -- see below
	pcall(tiny, s, error)
	local co = coroutine.wrap(function(v)
		return tiny(v, coroutine.yield) + 1
	end)
	co(s)
	s = co(s)
end
s = s + slow_one(2 * took)
print("sum=" .. s .. " spun=" .. 2 * took .. " tiny=" .. calls)
-- Between two calls of tiny, hot_loop does some arithmetic, so that tiny's
-- self time is a few per cent of the loop's, far from the 10 % share the
-- budget spares (mute.c: a function with a large share of the self time is
-- what an engineer looks for).  With nothing between the calls it was about
-- 15 %, and whether tiny was muted turned on the budget's calibration of a
-- trace point's cost (1 run in 4 at real-time priority muted the functions
-- after the loop instead).  The 1000 rounds after the loop spin ~0.3 ms each,
-- so that via_tail, pcall, the coroutine and the rest run a few thousand
-- times a second: under the 10,000 a budget would mute (mute.c, MIN_RATE)
-- and counted exactly; in a tight loop the budget mutes them too.
-- SPDX-License-Identifier: Apache-2.0
