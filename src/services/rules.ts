// Notification rules (extensions §X5): list, get, create, replace (PUT), update (PATCH: merge) and delete, wire-
// compatible with the infrastructure client's v2alpha rules. The body is checked whole before anything is written
// (domain/rule-validation.ts; here what needs the store or the delivery rules: the devices and contact groups exist,
// webhook URLs pass the SSRF guard, webhook headers follow a connector's rules), then stored as RuleRecord.spec.
// No new permission: project.read reads rules, device.update (developer and above) changes them and sees webhook
// secrets and header values; other readers see them as "", as a connector's.
import type { Principal } from '../auth/principal.ts';
import { checkUrlForWrite } from '../delivery/ssrf.ts';
import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../domain/errors.ts';
import { deviceName, ruleName } from '../domain/names.ts';
import { afterId, pageRequest, toPage } from '../domain/paging.ts';
import type { ActionSpec, RuleSpec } from '../domain/rule-spec.ts';
import {
  checkRuleBody,
  mergeRulePatch,
  MAX_RULES_PER_PROJECT,
  RULE_FIELDS,
  type CheckedRule,
  type RuleField,
} from '../domain/rule-validation.ts';
import type { Permission } from '../domain/roles.ts';
import { formatTimestamp } from '../domain/time.ts';
import { nowMicros } from '../runtime/clock.ts';
import type { RuleRecord } from '../store/contract/alerting.ts';
import type { ProjectRecord } from '../store/contract/records.ts';
import type { Repos } from '../store/contract/store.ts';
import type { PageQuery } from '../wire/paging.ts';
import type { Rule, RuleAction, RuleInput, RuleList } from '../wire/rules.ts';
import { requireProject } from './access.ts';
import { checkHeaders, checkSecret } from './data-connectors.ts';

/** Who sees webhook secrets and header values: whoever may change the rules. */
const canChangeRules = (permissions: ReadonlySet<Permission>) => permissions.has('device.update');

// ---- presentation ----

function presentAction(deps: Pick<Deps, 'secretBox'>, a: ActionSpec, reveal: boolean): RuleAction {
  const w = a.webhook;
  return {
    type: a.type,
    sms: null,
    email:
      a.type === 'EMAIL' && a.email
        ? {
            recipients: [...a.email.recipients],
            contactGroups: [...a.email.contactGroups],
            subject: a.email.subject,
            body: a.email.body,
          }
        : null,
    corrigo: null,
    serviceChannel: null,
    webhook:
      a.type === 'WEBHOOK' && w
        ? {
            url: w.url,
            signatureSecret:
              reveal && w.signatureSecretSealed !== '' ? deps.secretBox.open(w.signatureSecretSealed) : '',
            headers: Object.fromEntries(Object.entries(w.headers).map(([k, v]) => [k, reveal ? v : ''])),
          }
        : null,
    phoneCall: null,
    signalTower: null,
  };
}

/**
 * The wire Rule (every key present). Unset pointers of the infrastructure client read back null, as written:
 * triggerDelay, escalateAfter, schedule, the criteria the trigger does not use, and unacknowledgesAfter (absent: the
 * default, 14400s, applies).
 */
export function presentRule(deps: Pick<Deps, 'secretBox'>, r: RuleRecord, reveal: boolean): Rule {
  const spec = JSON.parse(r.spec) as RuleSpec;
  const t = spec.trigger;
  return {
    name: ruleName(r.projectId, r.id),
    enabled: r.enabled,
    displayName: r.displayName,
    devices: spec.devices.map((d) => deviceName(r.projectId, d)),
    deviceLabels: { ...spec.deviceLabels },
    projectLabels: { ...spec.projectLabels },
    trigger: {
      field: t.field,
      range: t.range
        ? { lower: t.range.lower ?? null, upper: t.range.upper ?? null, type: t.range.type, filter: null }
        : null,
      presence: t.presence ?? null,
      motion: t.motion ?? null,
      occupancy: t.occupancy ?? null,
      contact: t.contact ?? null,
      connection: t.connection ?? null,
      triggerCount: t.triggerCount ?? 0,
    },
    escalationLevels: spec.escalationLevels.map((l) => ({
      displayName: l.displayName,
      actions: l.actions.map((a) => presentAction(deps, a, reveal)),
      escalateAfter: l.escalateAfter ?? null,
    })),
    schedule: spec.schedule
      ? {
          timezone: spec.schedule.timezone,
          slots: spec.schedule.slots.map((s) => ({
            days: [...s.days],
            times: s.times.map((x) => ({ start: { ...x.start }, end: { ...x.end } })),
          })),
          inverse: spec.schedule.inverse,
        }
      : null,
    triggerDelay: spec.triggerDelay ?? null,
    reminderNotifications: spec.reminderNotifications,
    resolvedNotifications: spec.resolvedNotifications,
    unacknowledgesAfter: spec.unacknowledgesAfter ?? null,
    actions: [],
    createTime: formatTimestamp(r.createTime),
    updateTime: formatTimestamp(r.updateTime),
  };
}

// ---- the checks that need the store or the delivery rules ----

/**
 * Completes a checked rule: each webhook's URL (SSRF guard, only when `touched` names escalationLevels or actions, so
 * that a PATCH of another field never fails on a URL the guard's settings have since refused), headers and secret
 * (sealed); then, in the write's transaction, the devices (when touched) and contact groups (when the levels are)
 * must exist in the project and its organization.
 */
function completeWebhooks(deps: Deps, checked: CheckedRule, touched: ReadonlySet<RuleField>): void {
  const levelsTouched = touched.has('escalationLevels') || touched.has('actions');
  for (const w of checked.webhooks) {
    if (levelsTouched || typeof w.url !== 'string')
      checkUrlForWrite(w.url, deps.config.allowPrivateEndpoints, `${w.field}.url`);
    w.spec.url = w.url as string;
    // The alert transition header is among the reserved ones checkHeaders refuses (domain/push-headers.ts).
    w.spec.headers = checkHeaders(w.headers, `${w.field}.headers`);
    const secret = checkSecret(w.signatureSecret, `${w.field}.signatureSecret`);
    w.spec.signatureSecretSealed = secret === '' ? '' : deps.secretBox.seal(secret);
  }
}

async function checkReferences(
  tx: Repos,
  project: Pick<ProjectRecord, 'id' | 'organizationId'>,
  checked: CheckedRule,
  touched: ReadonlySet<RuleField>,
): Promise<void> {
  if (touched.has('devices')) {
    for (const [i, id] of checked.spec.devices.entries()) {
      const device = await tx.devices.get(id);
      if (!device || device.projectId !== project.id)
        throw badRequest(`devices[${i}]: no device ${deviceName(project.id, id)} in this project`);
    }
  }
  if (touched.has('escalationLevels') || touched.has('actions')) {
    for (const g of checked.contactGroups) {
      const group = g.organizationId === project.organizationId ? await tx.contacts.getGroup(g.groupId) : null;
      if (!group || group.organizationId !== project.organizationId)
        throw badRequest(
          `${g.field}: no contact group ${g.name} in the project's organization, organizations/${project.organizationId}`,
        );
    }
  }
}

function check(deps: Deps, projectId: string, body: unknown, touched: ReadonlySet<RuleField>): CheckedRule {
  const checked = checkRuleBody(body, {
    projectId,
    // An untouched e-mail action of a stored rule stays writable while SMTP is off: a PATCH may disable the rule.
    emailEnabled: deps.config.smtpUrl !== null || !(touched.has('escalationLevels') || touched.has('actions')),
  });
  completeWebhooks(deps, checked, touched);
  return checked;
}

const ALL_FIELDS: ReadonlySet<RuleField> = new Set(RULE_FIELDS);

async function requireRule(
  deps: Deps,
  principal: Principal,
  projectId: string,
  ruleId: string,
  permission: 'project.read' | 'device.update',
) {
  const { project, permissions } = await requireProject(deps, principal, projectId, permission);
  const rule = await deps.store.rules.get(ruleId);
  if (!rule || rule.projectId !== projectId) throw notFound('rule not found');
  return { project, rule, reveal: canChangeRules(permissions) };
}

const describeBy = (principal: Principal) => `${principal.kind}:${principal.id}`;

// ---- use cases ----

export async function listRules(
  deps: Deps,
  principal: Principal,
  projectId: string,
  query: PageQuery,
): Promise<RuleList> {
  const { permissions } = await requireProject(deps, principal, projectId, 'project.read');
  const filters = `rules:${projectId}`;
  const page = pageRequest(query, filters);
  const after = afterId(page.after);
  const rows = await deps.store.rules.listByProject(projectId, { after, limit: page.pageSize + 1 });
  const { items, nextPageToken } = toPage(rows, page, (r) => [r.id], filters);
  const reveal = canChangeRules(permissions);
  return { rules: items.map((r) => presentRule(deps, r, reveal)), nextPageToken };
}

export async function getRule(deps: Deps, principal: Principal, projectId: string, ruleId: string): Promise<Rule> {
  const { rule, reveal } = await requireRule(deps, principal, projectId, ruleId, 'project.read');
  return presentRule(deps, rule, reveal);
}

export async function createRule(deps: Deps, principal: Principal, projectId: string, input: RuleInput): Promise<Rule> {
  const { project } = await requireProject(deps, principal, projectId, 'device.update');
  const checked = check(deps, projectId, input, ALL_FIELDS);
  const now = nowMicros(deps);
  const rule: RuleRecord = {
    id: deps.ids.next(),
    projectId,
    displayName: checked.displayName,
    enabled: checked.enabled,
    spec: JSON.stringify(checked.spec),
    createTime: now,
    updateTime: now,
  };
  // The answer is built before the commit: if building it failed, nothing would be left behind.
  const view = await deps.store.transaction(async (tx) => {
    if (!(await tx.projects.get(projectId))) throw notFound('project not found');
    await checkReferences(tx, project, checked, ALL_FIELDS);
    if ((await tx.rules.countByProject(projectId)) >= MAX_RULES_PER_PROJECT)
      throw badRequest(`a project has at most ${MAX_RULES_PER_PROJECT} rules; delete one first`);
    await tx.rules.create(rule);
    return presentRule(deps, rule, true);
  });
  deps.logger.info({ rule: view.name, by: describeBy(principal) }, 'notification rule created');
  return view;
}

/**
 * PUT replaces the whole rule with the body (absent fields take their defaults); PATCH merges the body into the stored
 * rule (mergeRulePatch: with update_mask the listed fields, else every field present). Either way the result is
 * checked whole before it is written.
 */
async function writeRule(
  deps: Deps,
  principal: Principal,
  projectId: string,
  ruleId: string,
  makeBody: (current: Rule) => { body: unknown; touched: ReadonlySet<RuleField> },
): Promise<Rule> {
  const { project } = await requireProject(deps, principal, projectId, 'device.update');
  return deps.store.transaction(async (tx) => {
    const before = await tx.rules.get(ruleId);
    if (!before || before.projectId !== projectId) throw notFound('rule not found');
    const current = presentRule(deps, before, true);
    const { body, touched } = makeBody(current);
    const checked = check(deps, projectId, body, touched);
    await checkReferences(tx, project, checked, touched);
    const next: RuleRecord = {
      ...before,
      displayName: checked.displayName,
      enabled: checked.enabled,
      spec: JSON.stringify(checked.spec),
    };
    // A write that changes nothing keeps the rule as it is: the same settings, secrets compared opened (sealing
    // twice differs).
    const after = presentRule(deps, next, true);
    if (JSON.stringify(after) === JSON.stringify(current)) return current;
    next.updateTime = nowMicros(deps);
    await tx.rules.update(next);
    return { ...after, updateTime: formatTimestamp(next.updateTime) };
  });
}

export async function replaceRule(
  deps: Deps,
  principal: Principal,
  projectId: string,
  ruleId: string,
  input: RuleInput,
): Promise<Rule> {
  return writeRule(deps, principal, projectId, ruleId, () => ({ body: input, touched: ALL_FIELDS }));
}

export async function updateRule(
  deps: Deps,
  principal: Principal,
  projectId: string,
  ruleId: string,
  input: RuleInput,
  mask: ReadonlySet<string> | null,
): Promise<Rule> {
  return writeRule(deps, principal, projectId, ruleId, (current) => {
    const { merged, touched } = mergeRulePatch(current as unknown as Record<string, unknown>, input, mask);
    return { body: merged, touched };
  });
}

/** DELETE: the rule goes with its alerts, their pending conditions and queued notifications (RuleRepo.delete). */
export async function deleteRule(deps: Deps, principal: Principal, projectId: string, ruleId: string): Promise<void> {
  await requireRule(deps, principal, projectId, ruleId, 'device.update');
  await deps.store.transaction(async (tx) => {
    const r = await tx.rules.get(ruleId);
    if (!r || r.projectId !== projectId) throw notFound('rule not found');
    await tx.rules.delete(ruleId);
  });
  deps.logger.info({ rule: ruleName(projectId, ruleId), by: describeBy(principal) }, 'notification rule deleted');
}
