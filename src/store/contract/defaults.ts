// The Store's derived methods, each built once from other methods of its repo: a backend implements the primitives
// (XPrimitives) and overrides a default only to go faster (PostgreSQL: one statement instead of one per row). A
// default calls the methods of the repo it completes, overrides included, never a store's top-level repos: within
// store.transaction it runs on that transaction's repos. It is as atomic as the calls it makes, so all or nothing
// only within a transaction.
import type {
  ConnectorMetricRepo,
  DataConnectorRecord,
  DataConnectorRepo,
  DeliveryRecord,
  DeliveryRepo,
} from './connector-repos.ts';

/**
 * DeliveryRepo's methods with a default: add (insert), deleteMany (delete of each), deleteCounted (deleteMany, then the
 * counter), claimMany (claim of each ask in turn). A store whose claims hold locks until the commit overrides
 * claimMany, to take them in the one order every process takes them (DeliveryRepo.claimMany).
 */
export type DeliveryDerived = 'add' | 'deleteMany' | 'deleteCounted' | 'claimMany';
export type DeliveryPrimitives = Omit<DeliveryRepo, DeliveryDerived>;

/**
 * The whole DeliveryRepo: the primitives, `faster` where given, the defaults for the rest. `metrics` gives the
 * connector metric repo of the same transaction (the counter of deleteCounted's default), asked for only when that
 * default runs.
 */
export function withDeliveryDefaults(
  primitives: DeliveryPrimitives,
  metrics: () => Pick<ConnectorMetricRepo, 'addCounters'>,
  faster: Partial<Pick<DeliveryRepo, DeliveryDerived>> = {},
): DeliveryRepo {
  const repo: DeliveryRepo = {
    ...primitives,
    async add(rows) {
      await repo.insert(rows);
    },
    async deleteMany(ids) {
      let n = 0;
      for (const id of ids) if (await repo.delete(id)) n++;
      return n;
    },
    async deleteCounted(ids, series) {
      const n = await repo.deleteMany(ids);
      if (n > 0) await metrics().addCounters({ [series]: n });
    },
    async claimMany(asks, total, now, enqueuedAfter, leaseUntil) {
      const out: DeliveryRecord[][] = [];
      let left = total;
      for (const ask of asks) {
        const rows =
          left > 0
            ? await repo.claim(ask.connectorId, now, enqueuedAfter, leaseUntil, Math.min(ask.limit, left), ask.cap)
            : [];
        left -= rows.length;
        out.push(rows);
      }
      return out;
    },
    ...faster,
  };
  return repo;
}

/** DataConnectorRepo's methods with a default: getMany (get of each). */
export type DataConnectorDerived = 'getMany';
export type DataConnectorPrimitives = Omit<DataConnectorRepo, DataConnectorDerived>;

/** The whole DataConnectorRepo: the primitives, `faster` where given, the defaults for the rest. */
export function withDataConnectorDefaults(
  primitives: DataConnectorPrimitives,
  faster: Partial<Pick<DataConnectorRepo, DataConnectorDerived>> = {},
): DataConnectorRepo {
  const repo: DataConnectorRepo = {
    ...primitives,
    async getMany(ids) {
      const out = new Map<string, DataConnectorRecord>();
      for (const id of ids) {
        const c = await repo.get(id);
        if (c) out.set(id, c);
      }
      return out;
    },
    ...faster,
  };
  return repo;
}
