// A bare fastify hello-world, the yardstick for the API scenario: the cost of fastify itself on this machine.
import Fastify from 'fastify';
import { serveHelper } from './procs.ts';

const app = Fastify({ logger: false });
app.get('/hello', async () => ({ hello: 'world' }));
await app.listen({ port: 0, host: '127.0.0.1' });
const a = app.server.address();
serveHelper({ port: typeof a === 'object' && a ? a.port : 0 }, {});
