-- bench.lua — the Lua program of `make bench-real` (tests/bench/real/lua.sh):
-- Rearview's own versions of five Computer Language Benchmarks Game programs
-- (binary-trees, fannkuch-redux, n-body, spectral-norm, fasta), a counted
-- function, and a planted slow function that a capture must name at the top
-- of self time (`@...bench.lua:<line>:planted_slow`).
--
--   lua bench.lua [SCALE]     SCALE 1 = the benchmark, 0.05 = `lua.sh check`
-- Prints `count_me=<calls>` (the script's own count of count_me's calls) and
-- a checksum line; nothing else.
local scale = tonumber(arg and arg[1]) or 1
local counted = 0

local function count_me(x)
	counted = counted + 1
	return x + 1
end

-- binary-trees: allocate and walk complete binary trees.
local function make_tree(depth)
	if depth == 0 then
		return {}
	end
	depth = depth - 1
	return { make_tree(depth), make_tree(depth) }
end

local function check_tree(t)
	if t[1] then
		return 1 + check_tree(t[1]) + check_tree(t[2])
	end
	return 1
end

local function binary_trees(max_depth)
	local sum = check_tree(make_tree(max_depth + 1))
	local long_lived = make_tree(max_depth)
	for d = 4, max_depth, 2 do
		local iters = 1 << (max_depth - d + 4)
		for _ = 1, iters do
			sum = sum + check_tree(make_tree(d))
		end
		sum = count_me(sum)
	end
	return sum + check_tree(long_lived)
end

-- fannkuch-redux: count pancake flips over all permutations.
local function fannkuch(n)
	local perm, perm1, count = {}, {}, {}
	for i = 0, n - 1 do
		perm1[i] = i
	end
	local max_flips, checksum, sign, r = 0, 0, 1, n
	while true do
		while r ~= 1 do
			count[r - 1] = r
			r = r - 1
		end
		for i = 0, n - 1 do
			perm[i] = perm1[i]
		end
		local flips, k = 0, perm[0]
		while k ~= 0 do
			local i, j = 0, k
			while i < j do
				perm[i], perm[j] = perm[j], perm[i]
				i, j = i + 1, j - 1
			end
			flips = flips + 1
			k = perm[0]
		end
		if flips > max_flips then
			max_flips = flips
		end
		checksum = checksum + sign * flips
		sign = -sign
		while true do
			if r == n then
				return checksum + max_flips
			end
			local p0 = perm1[0]
			for i = 0, r - 1 do
				perm1[i] = perm1[i + 1]
			end
			perm1[r] = p0
			count[r] = count[r] - 1
			if count[r] > 0 then
				break
			end
			r = r + 1
		end
	end
end

-- n-body: five bodies under gravity, leapfrog steps.
local function nbody(steps)
	local pi, days = math.pi, 365.24
	local mass = 4 * pi * pi
	local bodies = {
		{ 0, 0, 0, 0, 0, 0, mass },
		{ 4.84, -1.16, -0.10, 0.606 * days, 2.81 * days, -0.02 * days, 0.00095 * mass },
		{ 8.34, 4.12, -0.40, -1.01 * days, 1.82 * days, 0.008 * days, 0.00028 * mass },
		{ 12.89, -15.11, -0.22, 1.08 * days, 0.868 * days, -0.01 * days, 0.000043 * mass },
		{ 15.37, -25.91, 0.17, 0.979 * days, 0.594 * days, -0.034 * days, 0.000051 * mass },
	}
	local function advance(dt)
		local n = #bodies
		for i = 1, n do
			local bi = bodies[i]
			for j = i + 1, n do
				local bj = bodies[j]
				local dx, dy, dz = bi[1] - bj[1], bi[2] - bj[2], bi[3] - bj[3]
				local d2 = dx * dx + dy * dy + dz * dz
				local mag = dt / (d2 * math.sqrt(d2))
				bi[4], bi[5], bi[6] = bi[4] - dx * bj[7] * mag, bi[5] - dy * bj[7] * mag, bi[6] - dz * bj[7] * mag
				bj[4], bj[5], bj[6] = bj[4] + dx * bi[7] * mag, bj[5] + dy * bi[7] * mag, bj[6] + dz * bi[7] * mag
			end
		end
		for i = 1, n do
			local b = bodies[i]
			b[1], b[2], b[3] = b[1] + dt * b[4], b[2] + dt * b[5], b[3] + dt * b[6]
		end
	end
	for _ = 1, steps do
		advance(0.01)
	end
	local e = 0
	for _, b in ipairs(bodies) do
		e = e + 0.5 * b[7] * (b[4] * b[4] + b[5] * b[5] + b[6] * b[6])
	end
	return e
end

-- spectral-norm: power iteration on the infinite matrix A(i,j) = 1/((i+j)(i+j+1)/2+i+1).
local function A(i, j)
	local ij = i + j - 1
	return 1.0 / (ij * (ij - 1) * 0.5 + i)
end

local function Av(x, y, n)
	for i = 1, n do
		local a = 0
		for j = 1, n do
			a = a + x[j] * A(i, j)
		end
		y[i] = a
	end
end

local function Atv(x, y, n)
	for i = 1, n do
		local a = 0
		for j = 1, n do
			a = a + x[j] * A(j, i)
		end
		y[i] = a
	end
end

local function spectral_norm(n)
	local u, v, t = {}, {}, {}
	for i = 1, n do
		u[i] = 1
	end
	for _ = 1, 10 do
		Av(u, t, n)
		Atv(t, v, n)
		Av(v, t, n)
		Atv(t, u, n)
	end
	local vbv, vv = 0, 0
	for i = 1, n do
		vbv = vbv + u[i] * v[i]
		vv = vv + v[i] * v[i]
	end
	return math.sqrt(vbv / vv)
end

-- fasta: pseudo-random DNA from a linear congruential generator.
local seed = 42
local function random(max)
	seed = (seed * 3877 + 29573) % 139968
	return max * seed / 139968
end

local function fasta(n)
	local alphabet = { { "a", 0.27 }, { "c", 0.12 }, { "g", 0.12 }, { "t", 0.27 }, { "B", 0.02 },
		{ "D", 0.02 }, { "H", 0.02 }, { "K", 0.02 }, { "M", 0.02 }, { "N", 0.02 }, { "R", 0.02 },
		{ "S", 0.02 }, { "V", 0.02 }, { "W", 0.02 }, { "Y", 0.02 } }
	local acc = 0
	for _, p in ipairs(alphabet) do
		acc = acc + p[2]
		p[2] = acc
	end
	local lines, line = {}, {}
	for i = 1, n do
		local r = random(1)
		local ch = alphabet[#alphabet][1]
		for _, p in ipairs(alphabet) do
			if r < p[2] then
				ch = p[1]
				break
			end
		end
		line[#line + 1] = ch
		if #line == 60 then
			lines[#lines + 1] = table.concat(line)
			line = {}
			count_me(0)
		end
	end
	local gc = 0
	for _, l in ipairs(lines) do
		local _, k = string.gsub(l, "[gc]", "")
		gc = gc + k
	end
	return gc
end

-- The planted cause: a long pure-Lua loop (no calls, so the end-of-run ring
-- still holds its entry), about a quarter of the run.
local function planted_slow(n)
	local h = 7
	for i = 1, n do
		h = (h * 31 + i) % 1000000007
	end
	return h % 10
end

local sum = binary_trees(math.max(6, math.floor(13 + math.log(scale, 2))))
sum = sum + fannkuch(scale >= 1 and 9 or 7)
sum = sum + nbody(math.floor(40000 * scale))
sum = sum + spectral_norm(math.floor(200 * math.sqrt(scale)))
sum = sum + fasta(math.floor(250000 * scale))
sum = sum + planted_slow(math.floor(50000000 * scale))
for i = 1, math.floor(1000 * scale) do
	sum = count_me(sum + i % 3)
end
print("count_me=" .. counted)
print(string.format("checksum=%.6f", sum))
-- SPDX-License-Identifier: Apache-2.0
