// Screen 9: the API reference, rendered from /v2/openapi.json (operations grouped by tag, with their operationId,
// parameters and summary). Everything comes from the document and is rendered as text.
import { useState } from 'preact/hooks';
import { ErrorText, Field, Loading, Title, useLoad } from '../components.tsx';

interface Op { method: string; path: string; operationId: string; summary: string; tag: string; parameters: any[]; body: boolean; auth: boolean }

export function ApiReference() {
  const [filter, setFilter] = useState('');
  const { data, error } = useLoad(async () => {
    const res = await fetch('/v2/openapi.json');
    if (!res.ok) throw new Error(`The OpenAPI document could not be read (HTTP ${res.status}).`);
    const doc = await res.json();
    const ops: Op[] = [];
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        ops.push({ method: method.toUpperCase(), path, operationId: op.operationId, summary: op.summary, tag: op.tags?.[0] ?? 'Other', parameters: op.parameters ?? [], body: !!op.requestBody, auth: !(Array.isArray(op.security) && op.security.length === 0) });
      }
    }
    return { ops, servers: doc.servers };
  }, []);
  const f = filter.trim().toLowerCase();
  const ops = (data?.ops ?? []).filter((o) => !f || `${o.method} ${o.path} ${o.operationId} ${o.summary} ${o.tag}`.toLowerCase().includes(f));
  const tags = [...new Set(ops.map((o) => o.tag))];
  return (
    <section>
      <Title>API reference</Title>
      <p>Every console action is a call to this API. Base URL <code>{data?.servers?.[0]?.url ?? ''}/v2</code>; authenticate with
        Basic Auth (service account key id and secret) or a Bearer token from <code>POST /oauth2/token</code>. The machine-readable
        document is <a href="/v2/openapi.json">/v2/openapi.json</a>; errors are explained on <a href="/docs/errors">/docs/errors</a>.</p>
      <Field label="Find an operation">{(id) => <input id={id} type="search" value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />}</Field>
      <ErrorText error={error} />
      {!data ? (error ? null : <Loading />) : tags.map((tag) => (
        <section key={tag} class="card" aria-labelledby={`tag-${tag.replace(/\W+/g, '-')}`}>
          <h2 id={`tag-${tag.replace(/\W+/g, '-')}`}>{tag}</h2>
          {ops.filter((o) => o.tag === tag).map((o) => (
            <div key={`${o.method} ${o.path}`} class="op">
              <div class="op-line"><span class={`method method-${o.method.toLowerCase()}`}>{o.method}</span> <code class="break">{o.path}</code></div>
              <div class="op-meta"><code class="muted">{o.operationId}</code>{o.auth ? null : <span class="badge badge-info">no auth</span>}{o.body ? <span class="badge badge-muted">JSON body</span> : null}</div>
              <p class="small">{o.summary}</p>
              {o.parameters.filter((p) => p.in === 'query').length > 0 ? (
                <p class="small muted">Query: {o.parameters.filter((p) => p.in === 'query').map((p) => p.name).join(', ')}</p>
              ) : null}
            </div>
          ))}
        </section>
      ))}
    </section>
  );
}
