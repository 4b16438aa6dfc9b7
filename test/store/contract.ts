// The Store contract: the behaviour every backend must show, written against the Store interface only, so a
// second backend runs it unchanged: `storeContract('postgres', () => createPostgresStore(freshSchemaUrl()))`.
// `open` must give a new, empty store at each call: each part of the suite opens one for its tests, and the
// tests of service-wide operations (counts, retention passes, releasing every lease) open one of their own.
// A store several processes share (`exclusive: false`) must also pass the shared part (contract/shared.ts):
// `openShared` makes a new, empty database on which each open() is one more process's store.
import { describe } from 'node:test';
import { accountContract } from './contract/accounts.ts';
import { alertingContract } from './contract/alerting.ts';
import { concurrencyContract } from './contract/concurrency.ts';
import { dataConnectorContract } from './contract/connectors.ts';
import { deliveryContract } from './contract/deliveries.ts';
import { deliveryLogContract } from './contract/delivery-log.ts';
import { deviceContract } from './contract/devices.ts';
import { eventContract } from './contract/events.ts';
import type { OpenStore } from './contract/fixtures.ts';
import { loginFailureContract } from './contract/login-failures.ts';
import { connectorMetricContract } from './contract/metrics.ts';
import { organizationContract, projectContract } from './contract/projects.ts';
import { sealedContract } from './contract/sealed.ts';
import { sessionContract } from './contract/sessions.ts';
import { sharingContract, type OpenSharedStore } from './contract/shared.ts';
import { transactionContract } from './contract/transactions.ts';

export type { OpenStore } from './contract/fixtures.ts';
export type { OpenSharedStore, SharedDatabase } from './contract/shared.ts';

export function storeContract(name: string, open: OpenStore, openShared?: OpenSharedStore): void {
  describe(`Store contract: ${name}`, () => {
    organizationContract(open);
    projectContract(open);
    accountContract(open);
    deviceContract(open);
    eventContract(open);
    dataConnectorContract(open);
    deliveryContract(open);
    deliveryLogContract(open);
    connectorMetricContract(open);
    sealedContract(open);
    alertingContract(open);
    sessionContract(open);
    transactionContract(open);
    concurrencyContract(open);
    loginFailureContract(open);
    sharingContract(open, openShared);
  });
}
