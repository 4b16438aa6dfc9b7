// The Store contract on PostgreSQL: each part on a new database of the test server (test/helpers/postgres.ts); its
// shared part with two or more stores (two pools and cluster connections, as two processes have) on one database.
import { createPostgresStore } from '../../src/store/postgres/index.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { storeContract } from './contract.ts';

storeContract(
  'postgres',
  async () => {
    const db = await createTestDatabase();
    const store = await createPostgresStore(db.url, { poolSize: 8 });
    const close = store.close.bind(store);
    store.close = async () => {
      await close();
      await db.drop();
    };
    return store;
  },
  async () => {
    const db = await createTestDatabase();
    return { open: () => createPostgresStore(db.url, { poolSize: 4 }), drop: db.drop };
  },
);
