// Periodic jobs in a cluster: run by the one process that leads each (Store.cluster), by this one when it owns the store.
import type { Store } from './store.ts';

/** Whether this process should run the named periodic job's pass now. */
export function leadsJob(store: Pick<Store, 'cluster'>, job: string): Promise<boolean> {
  return store.cluster === null ? Promise.resolve(true) : store.cluster.tryLead(job);
}
