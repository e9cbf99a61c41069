// SPDX-License-Identifier: Apache-2.0
// pprof_top.js — reads a gzip'd pprof profile with pprof-format (npm; a
// decoder nobody here wrote) and prints, per function, the sum of the first
// sample value where it is the leaf (self) and of the second (calls):
// "name<TAB>self<TAB>calls", one line each.  Usage: node pprof_top.js FILE
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const path = require('path');
const { Profile } = require(path.join(process.env.RVS_NODE_MODULES, 'pprof-format'));

const prof = Profile.decode(zlib.gunzipSync(fs.readFileSync(process.argv[2])));
const strings = prof.stringTable.strings;
const fnName = new Map(prof.function.map((f) => [Number(f.id), strings[Number(f.name)]]));
const locFn = new Map(prof.location.map((l) => [Number(l.id), Number(l.line[0].functionId)]));
const totals = new Map();
for (const s of prof.sample) {
  const name = fnName.get(locFn.get(Number(s.locationId[0])));
  const t = totals.get(name) || [0, 0];
  t[0] += Number(s.value[0]);
  t[1] += s.value.length > 1 ? Number(s.value[1]) : 0;
  totals.set(name, t);
}
for (const [name, [self, calls]] of totals) console.log(`${name}\t${self}\t${calls}`);
