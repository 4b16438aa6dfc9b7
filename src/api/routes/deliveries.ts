// The delivery log and recovery (extensions §X1, §X2): a connector's deliveries (`-`: the project's), one delivery,
// :resend, :replay and :test.
import type { FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.ts';
import { getDelivery, listDeliveries, resendDelivery } from '../../services/deliveries.ts';
import { replayDataConnector } from '../../services/replay.ts';
import { testDataConnector } from '../../services/test-push.ts';
import {
  DeliveryAnswerSchema,
  DeliveryListParamsSchema,
  DeliveryListSchema,
  DeliverySchema,
  ReplayAnswerSchema,
  ReplayBodySchema,
  ResendBodySchema,
  TestPushBodySchema,
} from '../../wire/deliveries.ts';
import type { App } from '../types.ts';
import { noBodyIsEmpty, principalOf } from '../http.ts';

type Params = { project: string; dc: string; delivery: string };
const paramsOf = (request: FastifyRequest) => request.params as Params;
const DC_PATH = '/v2/projects/:project/dataconnectors/:dc';
const DELIVERY_PATH = `${DC_PATH}/deliveries/:delivery`;

export function registerDeliveryRoutes(app: App, deps: Deps): void {
  app.get(
    `${DC_PATH}/deliveries`,
    {
      schema: { querystring: DeliveryListParamsSchema },
      config: {
        summary: "List a data connector's deliveries, newest first ({dc} '-': every connector of the project)",
        response: DeliveryListSchema,
      },
    },
    async (request) => {
      const { project, dc } = paramsOf(request);
      return listDeliveries(deps, principalOf(request), project, dc, request.query);
    },
  );

  app.get(
    DELIVERY_PATH,
    { config: { summary: 'Get a delivery with its attempts, oldest first', response: DeliverySchema } },
    async (request) => {
      const { project, dc, delivery } = paramsOf(request);
      return getDelivery(deps, principalOf(request), project, dc, delivery);
    },
  );

  app.post(
    `${DELIVERY_PATH}/@resend`,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: ResendBodySchema },
      config: {
        summary: "Queue the delivery's event again (same eventId) as a new delivery with trigger RESEND",
        response: DeliveryAnswerSchema,
      },
    },
    async (request) => {
      const { project, dc, delivery } = paramsOf(request);
      return { delivery: await resendDelivery(deps, principalOf(request), project, dc, delivery) };
    },
  );

  app.post(
    `${DC_PATH}/@replay`,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: ReplayBodySchema },
      config: {
        summary:
          "Queue the project's events of a time window again for this connector (REPLAY deliveries, original eventIds)",
        response: ReplayAnswerSchema,
      },
    },
    async (request) => {
      const { project, dc } = paramsOf(request);
      return replayDataConnector(deps, principalOf(request), project, dc, request.body);
    },
  );

  app.post(
    `${DC_PATH}/@test`,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: TestPushBodySchema },
      config: {
        summary: 'Push an example event from a synthetic device once, now, and answer the result (trigger TEST)',
        response: DeliveryAnswerSchema,
      },
    },
    async (request) => {
      const { project, dc } = paramsOf(request);
      return { delivery: await testDataConnector(deps, principalOf(request), project, dc, request.body) };
    },
  );
}
