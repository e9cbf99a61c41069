-- A planted slow function among busier but cheaper ones: slow_one must top self time.
local function cheap(x)
	return x * 2 + 1
end
local function slow_one(n)
	local h = 0
	for i = 1, n do
		h = (h + i * i) % 65521
	end
	return h
end
local s = 0
for i = 1, 20000 do
	s = s + cheap(i)
end
s = s + slow_one(3000000)
print(s)
-- SPDX-License-Identifier: Apache-2.0
