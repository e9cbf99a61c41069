-- A tail-call chain 100000 long: one frame deep, 100001 calls.
local function chain(k)
	if k == 0 then
		return 0
	end
	return chain(k - 1)
end
print(chain(100000))
-- SPDX-License-Identifier: Apache-2.0
