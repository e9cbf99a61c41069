// gen_node_profiles.js — real pprof files from two Node.js profilers, for
// tests/rvtrace/corpus/pprof (SOURCES.md there): npm `pprof` (Google's
// Node agent, profiles encoded by protobufjs) and npm `@datadog/pprof`
// (Datadog's fork, profiles encoded by pprof-format).  Each writes a wall
// time profile and a heap (allocation sampling) profile of the small
// workload below, gzip'd as the packages write them.
//
//   node gen_node_profiles.js MODULE_DIR OUT_PREFIX
// MODULE_DIR: a node_modules holding `pprof` and `@datadog/pprof`
// (gen_node_profiles.sh installs them in a scratch directory).
'use strict';
const fs = require('fs');
const path = require('path');

const [, , modules, prefix] = process.argv;
const google = require(path.join(modules, 'pprof'));
const datadog = require(path.join(modules, '@datadog/pprof'));

let sink = 0;
function leafHash(n) {
	let h = 2166136261;
	for (let i = 0; i < n; i++) h = Math.imul(h ^ i, 16777619);
	return h;
}
function allocate(n) {
	const a = [];
	for (let i = 0; i < n; i++) a.push({i, s: 'x'.repeat(64)});
	return a.length;
}
function middle() {
	sink += leafHash(200000);
	sink += allocate(2000);
}
function work(ms) {
	const end = Date.now() + ms;
	while (Date.now() < end) middle();
}

async function main() {
	// Google's agent: time.profile runs for durationMillis while the
	// event loop is free, so the workload runs in slices on timers.
	const slices = setInterval(() => work(20), 25);
	const gtime = await google.time.profile({durationMillis: 700, intervalMicros: 1000});
	clearInterval(slices);
	fs.writeFileSync(`${prefix}google-node-wall.pb.gz`, await google.encode(gtime));

	google.heap.start(16 * 1024, 64);
	work(300);
	const kept = [];
	for (let i = 0; i < 50; i++) kept.push(allocate(200));
	fs.writeFileSync(`${prefix}google-node-heap.pb.gz`, await google.encode(google.heap.profile()));
	google.heap.stop();

	datadog.time.start({intervalMicros: 1000});
	work(700);
	const dtime = datadog.time.stop();
	fs.writeFileSync(`${prefix}datadog-node-wall.pb.gz`, await datadog.encode(dtime));

	datadog.heap.start(16 * 1024, 64);
	work(300);
	for (let i = 0; i < 50; i++) kept.push(allocate(200));
	fs.writeFileSync(`${prefix}datadog-node-heap.pb.gz`, await datadog.encode(datadog.heap.profile()));
	datadog.heap.stop();
	console.log(`sink ${sink} kept ${kept.length}`);
}
main().catch((e) => {
	console.error(e);
	process.exit(1);
});
