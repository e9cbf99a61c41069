-- counted() is called through every path the VM has (direct, method, pcall,
-- sort comparator, metamethod, coroutine, tail call); the script prints its
-- own count, which the capture must match exactly.
local n = 0
local function counted(a, b)
	n = n + 1
	return (a or 0) < (b or 0)
end
local obj = { m = function(self, x) return counted(x) end }
for i = 1, 137 do
	counted(i)
	obj:m(i)
	pcall(counted, i)
end
local t = {}
for i = 1, 300 do
	t[i] = (i * 7919) % 311
end
table.sort(t, counted)
local mt = setmetatable({}, { __index = function(_, k) counted(k) return k end })
for i = 1, 50 do
	local _ = mt[i]
end
local co = coroutine.wrap(function()
	for i = 1, 20 do
		counted(i)
		coroutine.yield()
	end
end)
for _ = 1, 20 do
	co()
end
local function tail(k)
	if k == 0 then
		return counted()
	end
	return tail(k - 1)
end
tail(10)
print("counted=" .. n)
-- SPDX-License-Identifier: Apache-2.0
