// Notification rules (extensions §X5): list, create, get, replace (PUT), update (PATCH) and delete. The infrastructure
// client calls them under /v2alpha/, which verbs.ts rewrites to these routes.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import * as service from '../../services/rules.ts';
import { PageQuerySchema, UpdateMaskQuerySchema } from '../../wire/paging.ts';
import { RuleInputSchema, RuleListSchema, RuleSchema } from '../../wire/rules.ts';
import type { App } from '../types.ts';
import { noBodyIsEmpty, parseUpdateMask, principalOf } from '../http.ts';

type Params = { project: string; rule: string };
const paramsOf = (request: FastifyRequest) => request.params as Params;
const RULES_PATH = '/v2/projects/:project/rules';
const RULE_PATH = `${RULES_PATH}/:rule`;
const ALSO = ' (also served under /v2alpha/)';

export function registerRuleRoutes(app: App, deps: Deps): void {
  app.get(
    RULES_PATH,
    {
      schema: { querystring: PageQuerySchema },
      config: { summary: `List the notification rules of a project${ALSO}`, response: RuleListSchema },
    },
    async (request) => service.listRules(deps, principalOf(request), paramsOf(request).project, request.query),
  );

  app.post(
    RULES_PATH,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: RuleInputSchema },
      config: {
        summary: `Create a notification rule: a trigger on the project's devices (or data connectors) and the actions of each escalation level${ALSO}`,
        response: RuleSchema,
      },
    },
    async (request) => service.createRule(deps, principalOf(request), paramsOf(request).project, request.body),
  );

  app.get(
    RULE_PATH,
    { config: { summary: `Get a notification rule${ALSO}`, response: RuleSchema } },
    async (request) => {
      const { project, rule } = paramsOf(request);
      return service.getRule(deps, principalOf(request), project, rule);
    },
  );

  app.put(
    RULE_PATH,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: RuleInputSchema },
      config: {
        summary: `Replace a notification rule: absent fields take their defaults${ALSO}`,
        response: RuleSchema,
      },
    },
    async (request) => {
      const { project, rule } = paramsOf(request);
      return service.replaceRule(deps, principalOf(request), project, rule, request.body);
    },
  );

  app.patch(
    RULE_PATH,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: RuleInputSchema, querystring: UpdateMaskQuerySchema },
      config: {
        summary: `Update a notification rule: the fields given (or listed in update_mask) replace the stored ones${ALSO}`,
        response: RuleSchema,
      },
    },
    async (request) => {
      const { project, rule } = paramsOf(request);
      const mask = parseUpdateMask(request.query.updateMask);
      return service.updateRule(deps, principalOf(request), project, rule, request.body, mask);
    },
  );

  app.delete(
    RULE_PATH,
    {
      config: {
        summary: `Delete a notification rule with its alerts and their queued notifications${ALSO}`,
        response: Type.Object({}),
      },
    },
    async (request) => {
      const { project, rule } = paramsOf(request);
      await service.deleteRule(deps, principalOf(request), project, rule);
      return {};
    },
  );
}
