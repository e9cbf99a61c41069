// SPDX-License-Identifier: Apache-2.0
// check.js DOC ANSWERS — the real server's answers (ANSWERS: one JSON
// object a line, written by test_openapi.c: {"op": "get /api/v1/x/{id}",
// "status", "ctype", "json": the body parsed, or null, "reals": where it
// has reals with integral values, "what"}) against
// DOC: each status must be documented for its operation, each content
// type among that answer's, and a JSON body must validate against its
// schema (ajv, JSON Schema 2020-12).  And every operation's success
// answer (its 2xx) must have been seen once.  Prints every failure and
// "ok N answers"; exits 0 or 1.
'use strict';
const fs = require('fs');
const { schemaAjv, responseSchemas } = require('./schemas.js');

const doc = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const lines = fs.readFileSync(process.argv[3], 'utf8').split('\n').filter((l) => l.trim());
const ajv = schemaAjv(doc);
const schemas = responseSchemas(doc, ajv);
const bad = [];
const seen = new Set();
const nudge = (x) => (x === 0 ? x : x * (1 - 1e-12));
let validated = 0;

for (const line of lines) {
  const a = JSON.parse(line);
  const [method, path] = a.op.split(' ');
  const item = doc.paths[path];
  const op = item && item[method];
  const where = `${a.op} (${a.what}) -> ${a.status} ${a.ctype}`;
  if (!op) { bad.push(`${where}: no such operation documented`); continue; }
  const status = String(a.status);
  if (!op.responses[status]) { bad.push(`${where}: status not documented`); continue; }
  seen.add(`${a.op} ${status}`);
  const media = schemas.filter((s) => s.path === path && s.method === method && s.status === status);
  const m = media.find((s) => s.media === a.ctype) ||
    media.find((s) => s.media === a.ctype.split(';')[0].trim());
  if (!m) {
    bad.push(`${where}: content type not documented (${media.map((s) => s.media).join(', ')})`);
    continue;
  }
  if (m.media !== 'application/json') continue;
  if (a.json === null) { bad.push(`${where}: the body is not JSON`); continue; }
  // A real with an integral value ("5.0", which JSON.parse makes 5):
  // nudged toward zero off the integers, so "type": "integer" refuses it
  // and "number" (and its bounds) still take it.
  for (const at of a.reals || []) {
    const keys = at.split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (!keys.length) { a.json = nudge(a.json); continue; }
    const last = keys.pop();
    const parent = keys.reduce((x, k) => x[k], a.json);
    parent[last] = nudge(parent[last]);
  }
  validated++;
  if (!m.validate(a.json))
    bad.push(`${where}: ${ajv.errorsText(m.validate.errors, { separator: '; ' })}`);
}
for (const [path, item] of Object.entries(doc.paths))
  for (const [method, op] of Object.entries(item)) {
    if (method.startsWith('x-')) continue;
    for (const status of Object.keys(op.responses))
      if (/^2/.test(status) && !seen.has(`${method} ${path} ${status}`))
        bad.push(`${method} ${path}: its ${status} answer was never checked`);
  }
for (const b of bad) console.log(`not ok: ${b}`);
console.log(`${bad.length ? 'FAILED' : 'ok'} ${lines.length} answers (${validated} JSON bodies validated) against ${schemas.length} response schemas`);
process.exit(bad.length ? 1 : 0);
