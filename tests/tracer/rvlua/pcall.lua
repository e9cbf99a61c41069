-- 200 errors caught by pcall, from different depths, then a sort: the sort
-- must sit right under the main chunk, its comparator right under it.
local function deep(k)
	if k == 0 then
		error("boom")
	end
	return 1 + deep(k - 1)
end
for i = 1, 200 do
	if i % 2 == 0 then
		pcall(error, "x")
	else
		pcall(deep, i % 7)
	end
end
local t = {}
for i = 1, 500 do
	t[i] = (i * 31) % 97
end
table.sort(t, function(a, b) return a < b end)
print(#t)
-- SPDX-License-Identifier: Apache-2.0
