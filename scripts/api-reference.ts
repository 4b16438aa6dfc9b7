// docs/api-reference.md, generated from the OpenAPI document the server serves at /v2/openapi.json (itself made
// from the schemas the routes validate with), so the reference cannot drift from the API.
//   npm run docs:api        rewrites docs/api-reference.md
// test/operator/docs.test.ts fails when the page is not what this script would write.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

type Schema = {
  type?: string | string[];
  description?: string;
  properties?: Record<string, Schema>;
  patternProperties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  required?: string[];
  anyOf?: Schema[];
  const?: unknown;
  maxLength?: number;
};

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema: Schema;
}

interface Operation {
  operationId: string;
  tags: string[];
  summary?: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
  security?: unknown[];
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
}

export const REFERENCE_FILE = fileURLToPath(new URL('../docs/api-reference.md', import.meta.url));

/** A schema's type in a few words: `string`, `array of string`, `"A" or "B"`, `map of string`. */
function typeOf(schema: Schema): string {
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.anyOf) return [...new Set(schema.anyOf.map(typeOf))].join(' or ');
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const text = types
    .map((t) => {
      if (t === 'array') return `array of ${schema.items ? typeOf(schema.items) : 'any'}`;
      if (t === 'object' && schema.patternProperties && !schema.properties) {
        const value = Object.values(schema.patternProperties)[0];
        return `map of ${value ? typeOf(value) : 'any'}`;
      }
      return t;
    })
    .join(' or ');
  return (text || 'any') + (schema.maxLength !== undefined ? ` (at most ${schema.maxLength} characters)` : '');
}

/** Table rows for an object's fields, nested fields as `a.b` and fields of array items as `a[].b`. */
function fieldRows(schema: Schema, prefix = '', depth = 0): string[] {
  const object = schema.items?.properties ? schema.items : schema;
  if (!object.properties) return [];
  const rows: string[] = [];
  for (const [name, field] of Object.entries(object.properties)) {
    const path = `${prefix}${name}`;
    const required = object.required?.includes(name) ? 'yes' : '';
    rows.push(`| \`${path}\` | ${escapeCell(typeOf(field))} | ${required} | ${escapeCell(field.description ?? '')} |`);
    if (depth < 3 && (field.properties || field.items?.properties))
      rows.push(...fieldRows(field, `${path}${field.items ? '[]' : ''}.`, depth + 1));
  }
  return rows;
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function fieldTable(title: string, schema: Schema | undefined, requiredLabel: string): string[] {
  const rows = schema ? fieldRows(schema) : [];
  if (rows.length === 0) return [];
  return [`${title}:`, '', `| Field | Type | ${requiredLabel} | Notes |`, '|---|---|---|---|', ...rows, ''];
}

function anchor(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .trim()
    .replace(/ /g, '-');
}

export function renderApiReference(doc: OpenApiDocument): string {
  const byTag = new Map<string, Array<{ method: string; path: string; op: Operation }>>();
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      const tag = op.tags[0] ?? 'Other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push({ method: method.toUpperCase(), path, op });
    }
  }
  const out: string[] = [
    '# API reference',
    '',
    '<!-- Generated from /v2/openapi.json by `npm run docs:api`; edit the schemas in src/wire/ and the routes, not this page. -->',
    '',
    'Every operation of the `/v2` API and the token endpoint, grouped as in the OpenAPI document the server serves at',
    '`/v2/openapi.json` (load it into any OpenAPI tool or client generator; each operation has an `operationId` and a',
    'tag). The rules every operation shares come first; the pages linked from the [README](../README.md#documentation)',
    'explain each resource in prose.',
    '',
    '## Conventions',
    '',
    '* **Base URL**: `<PUBLIC_URL>/v2` (`http://127.0.0.1:8080/v2` by default; `baseUrl` in `bootstrap.json`). The',
    '  token endpoint is `<PUBLIC_URL>/oauth2/token`. Outside the API: `GET /healthz` (no credentials; 200',
    '  `{"status":"ok"}` when the store answers and takes writes, else 503 with the error body saying which: unreachable,',
    '  read-only or its disk full),',
    '  `GET /metrics` (Prometheus text) and the web console at `/`.',
    '* **Credentials**: Basic Auth with a service account key (`-u "$KEY_ID:$KEY_SECRET"`) or `Authorization: Bearer',
    '  <access token>` from the token endpoint ([authentication](authentication.md)). Operations marked *no',
    '  credentials* take none.',
    '* **Requests**: JSON bodies (parsed as JSON whatever the `Content-Type`; an empty body is no body); unknown',
    '  fields are ignored and `null` means absent. `updateMask` (or `update_mask`) limits a PATCH to the listed',
    '  fields. Query parameters are accepted in camelCase and snake_case; arrays as repeated keys',
    '  ([compatibility](compatibility.md)).',
    '* **Responses**: success is always 200 with a JSON object (`{}` for deletes and verbs without a result), one',
    '  line ending with a newline. Timestamps are RFC 3339 UTC with 6 fractional digits, durations `"1.500s"`.',
    '* **Errors**: `{"error": "<message>", "code": <status>, "help": "<PUBLIC_URL>/docs/errors#<status>"}` with 400,',
    '  401, 403, 404, 409, 429 (with `Retry-After`) or 503; 500 for a fault ([errors](errors.md)). The event stream',
    '  ([stream](stream.md)) and the token endpoint ([authentication](authentication.md)) add shapes of their own.',
    '* **Paging**: lists take `pageSize` (default 100, at most 1000) and `pageToken`, and answer `nextPageToken`',
    '  (`""` on the last page).',
    '* **Names**: resources are named by path, e.g. `projects/{project}/devices/{device}`; `{project}` may be `-` (every',
    '  project the caller can read) where a path says so. Ids are 20 characters of `[0-9a-v]`; emulated devices are',
    '  `emu` and 20 more.',
    '',
    '## Operations',
    '',
    ...[...byTag.entries()].map(
      ([tag, ops]) => `* [${tag}](#${anchor(tag)}): ${ops.map((o) => `\`${o.op.operationId}\``).join(', ')}`,
    ),
    '',
  ];
  for (const [tag, operations] of byTag) {
    out.push(`## ${tag}`, '');
    for (const { method, path, op } of operations) {
      out.push(`### \`${method} ${path}\``, '');
      const notes = [`\`${op.operationId}\``];
      if (op.security && op.security.length === 0) notes.push('no credentials');
      out.push(`${op.summary ? `${op.summary}. ` : ''}Operation ${notes.join(', ')}.`, '');
      const query = (op.parameters ?? []).filter((p) => p.in === 'query');
      if (query.length > 0) {
        out.push('Query parameters:', '', '| Parameter | Type | Required | Notes |', '|---|---|---|---|');
        for (const p of query)
          out.push(
            `| \`${p.name}\` | ${escapeCell(typeOf(p.schema))} | ${p.required ? 'yes' : ''} | ${escapeCell(p.schema.description ?? '')} |`,
          );
        out.push('');
      }
      const body = op.requestBody ? Object.values(op.requestBody.content)[0]?.schema : undefined;
      out.push(...fieldTable('Request body', body, 'Required'));
      const response = op.responses['200']?.content ? Object.values(op.responses['200'].content)[0]?.schema : undefined;
      out.push(...fieldTable('Response (200)', response, 'Always'));
    }
  }
  return out.join('\n').replace(/\n+$/, '\n');
}

/** The document a server with a fresh, throwaway data dir serves. */
export async function fetchOpenApiDocument(): Promise<OpenApiDocument> {
  const { loadConfig } = await import('../src/config.ts');
  const { buildDeps } = await import('../src/main.ts');
  const { createApp } = await import('../src/api/app.ts');
  const { createSilentLogger } = await import('../src/runtime/logger.ts');
  const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-openapi-'));
  try {
    const deps = buildDeps(loadConfig({ SENSORCLOUD_DATA_DIR: dataDir, SENSORCLOUD_HEARTBEAT_INTERVAL: '0' }), {
      logger: createSilentLogger(),
    });
    const app = await createApp(deps);
    try {
      const res = await app.inject({ method: 'GET', url: '/v2/openapi.json' });
      return res.json() as OpenApiDocument;
    } finally {
      await app.close();
      await deps.store.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(REFERENCE_FILE, renderApiReference(await fetchOpenApiDocument()));
  process.stdout.write(`wrote ${REFERENCE_FILE}\n`);
}
