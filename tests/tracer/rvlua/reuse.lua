-- 300 chunks, each loaded, called once and collected before the next, so
-- their Protos reuse each other's addresses (most closures do, in plain Lua):
-- every one must keep its own name, `=genN:1:f`.
for i = 1, 300 do
	local f = load("return function() return " .. i .. " end", "=gen" .. i)()
	f()
	f = nil
	collectgarbage()
end
-- SPDX-License-Identifier: Apache-2.0
