-- A generator that yields from two levels down, resumed to exhaustion, and a
-- coroutine that dies with an error: every coroutine frame must be recorded
-- under the resume that runs it.
local function inner(i)
	coroutine.yield(i)
end
local function body()
	for i = 1, 5 do
		inner(i)
	end
end
local co = coroutine.create(body)
while coroutine.resume(co) do
	if coroutine.status(co) == "dead" then
		break
	end
end
local bad = coroutine.create(function() inner(1) error("dead") end)
coroutine.resume(bad)
coroutine.resume(bad)
local function after()
	return 1
end
print(after())
-- SPDX-License-Identifier: Apache-2.0
