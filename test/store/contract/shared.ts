// The shared part of the Store contract: what a store several processes share must keep across them, written against
// the Store interface only, with two or more stores on one database standing for the processes (shared/fixtures.ts).
// A store says it is shared with `exclusive: false` (and a `cluster`); then storeContract needs an OpenSharedStore
// and runs this part, so a new shared backend gets these tests by saying so.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { withFreshStore, type OpenStore } from './fixtures.ts';
import { sharedAlertingContract } from './shared/alerting.ts';
import { sharedClusterContract } from './shared/cluster.ts';
import type { OpenSharedStore } from './shared/fixtures.ts';
import { sharedMetricContract } from './shared/metrics.ts';
import { sharedQueueContract } from './shared/queue.ts';

export type { OpenSharedStore, SharedDatabase } from './shared/fixtures.ts';

/** Checks that the store says whether processes share it, and runs the shared part on a store that says so. */
export function sharingContract(open: OpenStore, openShared: OpenSharedStore | undefined): void {
  describe('sharing', () => {
    it("says whether processes share it: one process's store has no cluster; a shared store has one and passes the shared part", () =>
      withFreshStore(open, async (s) => {
        assert.equal(s.cluster === null, s.exclusive, 'a cluster exactly when the store is not exclusive');
        if (s.exclusive) assert.equal(openShared, undefined, 'the shared part is for a store several processes share');
        else
          assert.notEqual(
            openShared,
            undefined,
            'a shared store passes the shared part: give storeContract an OpenSharedStore',
          );
      }));
  });
  if (openShared) sharedStoreContract(openShared);
}

export function sharedStoreContract(openShared: OpenSharedStore): void {
  describe('shared by several processes', () => {
    sharedClusterContract(openShared);
    sharedQueueContract(openShared);
    sharedMetricContract(openShared);
    sharedAlertingContract(openShared);
  });
}
