-- calls.lua — the worst case for rvlua: nothing but Lua calls (fib(32), 7 M
-- calls, ~14 ns each uninstrumented).  `LUA_BENCH_SCRIPT=tests/bench/real/lua/calls.lua
-- sh tests/bench/real/lua.sh rounds N` measures the cost per call and return.
local function fib(n)
	if n < 2 then
		return n
	end
	return fib(n - 1) + fib(n - 2)
end
print(fib(32))
-- SPDX-License-Identifier: Apache-2.0
