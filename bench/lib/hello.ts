// The yardsticks for the API scenario, in a process of their own: a bare fastify hello-world (the cost of fastify
// itself on this machine) and the physical limit for the device page, fastify answering the page's exact bytes
// from memory with no auth and no store (`page` sets them).
import Fastify from 'fastify';
import { serveHelper } from './procs.ts';

let page = Buffer.alloc(0);
let pageType = 'application/json; charset=utf-8';

const app = Fastify({ logger: false });
app.get('/hello', async () => ({ hello: 'world' }));
app.get('/page', (_req, reply) => {
  reply.header('content-type', pageType).send(page);
});
await app.listen({ port: 0, host: '127.0.0.1' });
const a = app.server.address();
serveHelper(
  { port: typeof a === 'object' && a ? a.port : 0 },
  {
    page(args: { body: string; contentType: string }) {
      page = Buffer.from(args.body, 'utf8');
      pageType = args.contentType;
      return { bytes: page.length };
    },
  },
);
