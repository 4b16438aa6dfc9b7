// The delivery queue's side of the event pipeline (contract §6.1): inside the transaction that stores an event, one
// row per matching ACTIVE connector, push body built once, handed to the running engine when it has room
// (handoff.ts), so an event is stored and queued, or neither.
import type { EventConsumer, EventPipeline } from '../events/pipeline.ts';
import { nowMicros, type Clock } from '../runtime/clock.ts';
import type { DataConnectorRecord } from '../store/contract/connector-repos.ts';
import type { HandoffPort } from './handoff.ts';
import { rowsFor } from './push-body.ts';

const PING = 'ping';

/** The pipeline consumer: runs inside the transaction that stores the event, so it is stored and queued, or neither. */
export function createEnqueueConsumer(deps: { clock: Clock }, port: HandoffPort | null = null): EventConsumer {
  return {
    async consume(tx, emitted, outcome) {
      if (emitted.event.eventType === PING) return;
      const connectors = await tx.dataConnectors.listActiveByProject(emitted.device.projectId);
      if (connectors.length === 0) return;
      const now = nowMicros(deps);
      const { rows, targets } = rowsFor(connectors, emitted, emitted.device, now);
      if (rows.length === 0) return;
      const handoff = port?.current ?? null;
      const handed: Array<{ index: number; connector: DataConnectorRecord; slot: boolean }> = [];
      if (handoff) {
        for (let index = 0; index < rows.length; index++) {
          const row = rows[index]!;
          const reservation = handoff.reserve(targets[index]!, now, rows.length);
          if (reservation === null) continue;
          row.leaseUntil = reservation.leaseUntil;
          row.dueTime = reservation.leaseUntil;
          row.leaseIf = reservation.leaseIf;
          handed.push({ index, connector: targets[index]!, slot: reservation.slot });
        }
        if (handed.length > 0) {
          // A reservation is used only by a row that was queued leased and committed; every other ending gives it back.
          outcome.onRollback(() => handed.forEach((h) => handoff.release(h.connector.id, h.slot)));
          outcome.onCommit(() => {
            for (const h of handed) {
              const { connectorId, eventId, body, enqueueTime, dueTime, leaseUntil, queued } = rows[h.index]!;
              if (queued?.leased) {
                const delivery = {
                  id: queued.id,
                  connectorId,
                  eventId,
                  body,
                  enqueueTime,
                  dueTime,
                  attempts: 0,
                  leaseUntil: leaseUntil!,
                };
                handoff.launch({ delivery, connector: h.connector }, h.slot);
              } else {
                handoff.release(h.connector.id, h.slot, true);
              }
            }
          });
        }
      }
      await tx.deliveries.add(rows);
    },
  };
}

/** Registers the enqueue consumer on the pipeline (composition root) and returns the pipeline. */
export function withDeliveryQueue(events: EventPipeline, clock: Clock, port: HandoffPort | null = null): EventPipeline {
  events.addConsumer(createEnqueueConsumer({ clock }, port));
  return events;
}
