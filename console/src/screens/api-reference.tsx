// Screen 9: the API reference, rendered from /v2/openapi.json (operations grouped by tag, with their operationId,
// parameters and summary, and, folded per operation, the fields of the request body and of the 200 response).
// Everything comes from the document and is rendered as text.
import { useState } from 'preact/hooks';
import { ErrorText, Field, Loading, Title, useLoad } from '../components.tsx';

interface Schema {
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
}

interface Op {
  method: string;
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  parameters: any[];
  auth: boolean;
  body: Schema | null;
  response: Schema | null;
}

const jsonSchema = (content: any): Schema | null => content?.['application/json']?.schema ?? null;

/** A schema's type in a few words: `string`, `list of string`, `"A" or "B"`, `map of string`, `number or null`. */
function typeText(schema: Schema): string {
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.anyOf) return [...new Set(schema.anyOf.map(typeText))].join(' or ');
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const text = types
    .map((t) => {
      if (t === 'array')
        return `list of ${schema.items ? (schema.items.properties ? 'objects' : typeText(schema.items)) : 'any'}`;
      if (
        t === 'object' &&
        !schema.properties &&
        (schema.patternProperties || typeof schema.additionalProperties === 'object')
      ) {
        const value = Object.values(schema.patternProperties ?? {})[0] ?? (schema.additionalProperties as Schema);
        return `map of ${value && typeText(value) !== 'any' ? typeText(value) : 'any'}`;
      }
      return t;
    })
    .join(' or ');
  return (text || 'any') + (schema.maxLength !== undefined ? `, at most ${schema.maxLength} characters` : '');
}

/** An object's fields, one a line, nested objects (and the objects of lists) indented under their field. */
function Fields({ schema, mark }: { schema: Schema; mark: 'required' | 'optional' }) {
  const object = schema.items?.properties ? schema.items : schema;
  const entries = Object.entries(object.properties ?? {});
  if (entries.length === 0)
    return <p class="muted small">{object.type === 'object' ? 'An empty object: {}' : typeText(schema)}</p>;
  return (
    <ul class="schema">
      {entries.map(([name, field]) => {
        const required = object.required?.includes(name) ?? false;
        const nested = field.properties || field.items?.properties;
        return (
          <li key={name}>
            <code class="schema-name">{name}</code> <span class="schema-type">{typeText(field)}</span>
            {mark === 'required' && required ? <span class="schema-mark">required</span> : null}
            {mark === 'optional' && !required ? <span class="schema-mark schema-optional">optional</span> : null}
            {field.description ? <span class="schema-desc">{field.description}</span> : null}
            {nested ? <Fields schema={field} mark={mark} /> : null}
          </li>
        );
      })}
    </ul>
  );
}

function Shapes({ op }: { op: Op }) {
  return (
    <details class="op-shapes">
      <summary>{op.body ? 'Request body and response' : 'Response'}</summary>
      <div class="shapes">
        {op.body ? (
          <div class="shape">
            <h3>
              Request body <span class="muted small">(JSON)</span>
            </h3>
            <Fields schema={op.body} mark="required" />
          </div>
        ) : null}
        <div class="shape">
          <h3>
            Response <span class="muted small">(200, JSON)</span>
          </h3>
          {op.response ? <Fields schema={op.response} mark="optional" /> : <p class="muted small">Not described.</p>}
        </div>
      </div>
    </details>
  );
}

export function ApiReference() {
  const [filter, setFilter] = useState('');
  const { data, error } = useLoad(async () => {
    const res = await fetch('/v2/openapi.json');
    if (!res.ok) throw new Error(`The OpenAPI document could not be read (HTTP ${res.status}).`);
    const doc = await res.json();
    const ops: Op[] = [];
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        ops.push({
          method: method.toUpperCase(),
          path,
          operationId: op.operationId,
          summary: op.summary,
          tag: op.tags?.[0] ?? 'Other',
          parameters: op.parameters ?? [],
          auth: !(Array.isArray(op.security) && op.security.length === 0),
          body: jsonSchema(op.requestBody?.content),
          response: jsonSchema(op.responses?.['200']?.content),
        });
      }
    }
    return { ops, servers: doc.servers };
  }, []);
  const f = filter.trim().toLowerCase();
  const ops = (data?.ops ?? []).filter(
    (o) => !f || `${o.method} ${o.path} ${o.operationId} ${o.summary} ${o.tag}`.toLowerCase().includes(f),
  );
  const tags = [...new Set(ops.map((o) => o.tag))];
  return (
    <section>
      <Title>API reference</Title>
      <p>
        Every console action is a call to this API. Base URL <code>{data?.servers?.[0]?.url ?? ''}/v2</code>;
        authenticate with Basic Auth (service account key id and secret) or a Bearer token from{' '}
        <code>POST /oauth2/token</code>. The machine-readable document is{' '}
        <a href="/v2/openapi.json">/v2/openapi.json</a>; errors are explained on <a href="/docs/errors">/docs/errors</a>
        . Open an operation's <strong>Request body and response</strong> to see their fields.
      </p>
      <Field label="Find an operation">
        {(id) => (
          <input
            id={id}
            type="search"
            value={filter}
            onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
          />
        )}
      </Field>
      <ErrorText error={error} />
      {!data ? (
        error ? null : (
          <Loading />
        )
      ) : (
        tags.map((tag) => (
          <section key={tag} class="card" aria-labelledby={`tag-${tag.replace(/\W+/g, '-')}`}>
            <h2 id={`tag-${tag.replace(/\W+/g, '-')}`}>{tag}</h2>
            {ops
              .filter((o) => o.tag === tag)
              .map((o) => (
                <div key={`${o.method} ${o.path}`} class="op" data-operation={o.operationId}>
                  <div class="op-line">
                    <span class={`method method-${o.method.toLowerCase()}`}>{o.method}</span>{' '}
                    <code class="break">{o.path}</code>
                  </div>
                  <div class="op-meta">
                    <code class="muted">{o.operationId}</code>
                    {o.auth ? null : <span class="badge badge-info">no auth</span>}
                    {o.body ? <span class="badge badge-muted">JSON body</span> : null}
                  </div>
                  <p class="small">{o.summary}</p>
                  {o.parameters.filter((p) => p.in === 'query').length > 0 ? (
                    <p class="small muted">
                      Query:{' '}
                      {o.parameters
                        .filter((p) => p.in === 'query')
                        .map((p) => p.name)
                        .join(', ')}
                    </p>
                  ) : null}
                  <Shapes op={o} />
                </div>
              ))}
          </section>
        ))
      )}
    </section>
  );
}
