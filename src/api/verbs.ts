// Custom methods (contract §1.9): `/devices/{d}:stream` and `/devices/{d}` are different routes. The router
// cannot split on a colon, so URLs are rewritten before routing: `…/x:verb` becomes `…/x/@verb`, with `%3A`
// decoded, a single trailing slash dropped and a run of leading slashes made one. Only the known verbs are rewritten.
export const VERBS = [
  'metricsHistory',
  'metrics',
  'sync',
  'getInviteUrl',
  'stream',
  'batchUpdate',
  'transfer',
  'publish',
  'batchCreate',
  'batchDelete',
  'accept',
  'lookup',
];
const VERB_RE = new RegExp(`:(${VERBS.join('|')})$`);
// The delivery log's verbs (extensions §X2) and :rotateSecret (§X3) are rewritten only after the resource they belong
// to, so that a label key ending in ":test" (label keys may hold colons) still names its label.
const CONNECTOR_VERB_RE = /^(\/v2\/projects\/[^/]+\/dataconnectors\/[^/]+):(replay|test|rotateSecret)$/;
const DELIVERY_VERB_RE = /^(\/v2\/projects\/[^/]+\/dataconnectors\/[^/]+\/deliveries\/[^/]+):(resend)$/;
// An alert's verbs (extensions §X5), likewise only after an alert.
const ALERT_VERB_RE = /^(\/v2\/projects\/[^/]+\/alerts\/[^/]+):(acknowledge|resolve)$/;
// Notification rules and contacts (extensions §X5) are also served under /v2alpha/, the path of the infrastructure
// client: the same routes, reached by rewriting the prefix (so authentication, rate limiting and errors are the API's).
const ALPHA_RE = /^\/v2alpha(?=\/(?:projects\/[^/]+\/(?:rules|contacts)|organizations\/[^/]+\/contactGroups)(?:\/|$))/;

export function rewriteUrl(url: string): string {
  const q = url.indexOf('?');
  let path = q < 0 ? url : url.slice(0, q);
  const search = q < 0 ? '' : url.slice(q);
  path = path.replace(/%3a/gi, ':');
  // `//v2/…`: the infrastructure client joins its base URL and `/v2/…` as they are, and its default emulator URL ends
  // in a slash. Without this the path would not be the API's, and a GET of it would answer the console's page.
  if (path.startsWith('//')) path = path.replace(/^\/+/, '/');
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  path = path.replace(ALPHA_RE, '/v2');
  path = path
    .replace(VERB_RE, '/@$1')
    .replace(CONNECTOR_VERB_RE, '$1/@$2')
    .replace(DELIVERY_VERB_RE, '$1/@$2')
    .replace(ALERT_VERB_RE, '$1/@$2');
  return path + search;
}

/** The public form of a route path: `/x/@verb` back to `/x:verb` (for the OpenAPI document). */
export function publicPath(routePath: string): string {
  return routePath.replace(/\/@([A-Za-z]+)$/, ':$1');
}
