// SPDX-License-Identifier: Apache-2.0
// lint.js DOC — DOC is valid OpenAPI 3.1 (@apidevtools/swagger-parser:
// the OpenAPI 3.1 schema and its $refs), and every schema in it compiles
// under JSON Schema 2020-12 in ajv's strict mode (an unknown keyword, a
// misspelt "required", a dangling $ref fail).  Prints "ok" or the
// reasons; exits 0 or 1.  Modules from NODE_PATH (tests/server/openapi's
// package.json, installed under build/).
'use strict';
const fs = require('fs');
const SwaggerParser = require('@apidevtools/swagger-parser');
const { schemaAjv, responseSchemas } = require('./schemas.js');

async function main() {
  const file = process.argv[2];
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (!/^3\.1\./.test(doc.openapi)) throw new Error(`openapi is ${doc.openapi}, not 3.1.x`);
  await SwaggerParser.validate(JSON.parse(JSON.stringify(doc)));
  const ajv = schemaAjv(doc);
  for (const name of Object.keys(doc.components.schemas))
    ajv.getSchema(`urn:rearview:openapi#/components/schemas/${name}`);
  const n = responseSchemas(doc, ajv).length;
  console.log(`ok ${file}: OpenAPI ${doc.openapi}, ${Object.keys(doc.paths).length} paths, ${n} response schemas compiled`);
}
main().catch((e) => { console.error(`lint: ${e.message}`); process.exit(1); });
