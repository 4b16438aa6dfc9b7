// Sealed secrets kept inside JSON text (master key rotation), found and rewritten alike by both stores: the signature
// secrets of a rule's webhook actions (rules.spec, domain/rule-spec.ts) and of queued webhook notifications
// (alert_outbox.payload, as alerts/notify.ts writes it). Rewriting one parses the text and writes it back with that
// secret alone changed; text that does not parse, or holds no such secret, lists nothing and is never written.
import type { SealedValue } from '../contract/store.ts';

type Json = Record<string, unknown>;

const objectOf = (value: unknown): Json | null =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null;

function parse(text: string): Json | null {
  try {
    return objectOf(JSON.parse(text));
  } catch {
    return null;
  }
}

/** The webhook of action `action` of level `level`, when it holds a non-empty sealed secret. */
function ruleWebhookAt(spec: Json, level: number, action: number): Json | null {
  const levels = spec.escalationLevels;
  if (!Array.isArray(levels)) return null;
  const actions = objectOf(levels[level])?.actions;
  if (!Array.isArray(actions)) return null;
  const webhook = objectOf(objectOf(actions[action])?.webhook);
  const sealed = webhook?.signatureSecretSealed;
  return typeof sealed === 'string' && sealed !== '' ? webhook! : null;
}

/** A `ruleWebhook` value's id: `<ruleId>/<level>/<action>`, the level and action as indexes into the rule's spec. */
const ruleWebhookId = (ruleId: string, level: number, action: number) => `${ruleId}/${level}/${action}`;

/** The parts of a `ruleWebhook` id; null when it is not one. */
export function parseRuleWebhookId(id: string): { ruleId: string; level: number; action: number } | null {
  const m = /^(.+)\/(0|[1-9]\d{0,5})\/(0|[1-9]\d{0,5})$/.exec(id);
  return m ? { ruleId: m[1]!, level: Number(m[2]), action: Number(m[3]) } : null;
}

/** The rule's non-empty webhook signature secrets, by level, then action. */
export function ruleWebhookSecrets(ruleId: string, specText: string): SealedValue[] {
  const spec = parse(specText);
  const levels = spec?.escalationLevels;
  if (!Array.isArray(levels)) return [];
  const found: SealedValue[] = [];
  levels.forEach((level, l) => {
    const actions = objectOf(level)?.actions;
    if (!Array.isArray(actions)) return;
    actions.forEach((_action, a) => {
      const webhook = ruleWebhookAt(spec!, l, a);
      if (webhook)
        found.push({
          kind: 'ruleWebhook',
          id: ruleWebhookId(ruleId, l, a),
          sealed: webhook.signatureSecretSealed as string,
        });
    });
  });
  return found;
}

/** The spec with that webhook's secret replaced; null when it has no non-empty one there. */
export function withRuleWebhookSecret(specText: string, level: number, action: number, sealed: string): string | null {
  const spec = parse(specText);
  const webhook = spec && ruleWebhookAt(spec, level, action);
  if (!webhook) return null;
  webhook.signatureSecretSealed = sealed;
  return JSON.stringify(spec);
}

/** The ids an `outboxWebhook` value may have: the row's (an integer). */
export const OUTBOX_ID = /^[1-9]\d{0,14}$/;

/** A queued webhook notification's secret, when non-empty. */
export function outboxWebhookSecret(id: number, payloadText: string): SealedValue | null {
  const sealed = parse(payloadText)?.signatureSecretSealed;
  return typeof sealed === 'string' && sealed !== '' ? { kind: 'outboxWebhook', id: String(id), sealed } : null;
}

/** The payload with its secret replaced; null when it has no non-empty one. */
export function withOutboxWebhookSecret(payloadText: string, sealed: string): string | null {
  const payload = parse(payloadText);
  const current = payload?.signatureSecretSealed;
  if (typeof current !== 'string' || current === '') return null;
  payload!.signatureSecretSealed = sealed;
  return JSON.stringify(payload);
}
