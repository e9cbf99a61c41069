// SPDX-License-Identifier: Apache-2.0
// schemas.js — the document's schemas in ajv (JSON Schema 2020-12, the
// dialect OpenAPI 3.1 uses, strict mode, formats from ajv-formats), and
// the lookup of one operation's documented answer.
'use strict';
const Ajv2020 = require('ajv/dist/2020');
const addFormats = require('ajv-formats');

const DOC_ID = 'urn:rearview:openapi';
// Keywords of the OpenAPI document around its schemas: ajv reads the
// document only for the schemas $refs point into.
const DOC_KEYWORDS = ['openapi', 'info', 'servers', 'security', 'paths', 'components',
  'jsonSchemaDialect', 'x-rearview-catch-all'];

function schemaAjv(doc) {
  const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true });
  addFormats(ajv);
  for (const k of DOC_KEYWORDS) ajv.addKeyword({ keyword: k });
  ajv.addSchema(doc, DOC_ID);
  return ajv;
}

const ptr = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function deref(doc, o) {
  while (o && o.$ref) {
    const parts = o.$ref.replace(/^#\//, '').split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    o = parts.reduce((x, p) => x && x[p], doc);
  }
  return o;
}

// Every (path, method, status, media type) with a schema, compiled.
function responseSchemas(doc, ajv) {
  const out = [];
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) {
      if (method.startsWith('x-')) continue;
      for (const [status, r0] of Object.entries(op.responses || {})) {
        const r = deref(doc, r0);
        for (const [media, m] of Object.entries(r.content || {})) {
          if (!m.schema) continue;
          const at = r0.$ref ? `${r0.$ref}/content/${ptr(media)}/schema`
            : `#/paths/${ptr(path)}/${method}/responses/${status}/content/${ptr(media)}/schema`;
          const v = ajv.getSchema(DOC_ID + at);
          if (!v) throw new Error(`no schema at ${at}`);
          out.push({ path, method, status, media, validate: v });
        }
      }
    }
  return out;
}

module.exports = { schemaAjv, responseSchemas, deref };
