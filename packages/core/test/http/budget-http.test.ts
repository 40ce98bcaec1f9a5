import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { createHttpLimiter, whenResponseDone, type HttpOptions } from '@floodgate/core/adapter';
import { answerOf, budgetConformance, serveHttp, sseReadable, type AdapterFactory } from '@floodgate/testing';

/*
 * The budget suite (cost per unit, settle, and the bound under concurrency) on core's HTTP layer alone: a
 * bare node:http server that does what every adapter does with createHttpLimiter (decide, write the
 * outcome, and hand the response's end to completed()), so a fault in core shows here before any framework.
 */
const nodeFactory: AdapterFactory = {
  name: 'core-node',
  async makeApp(spec) {
    let hits = 0;
    const http =
      spec.global === undefined
        ? undefined
        : createHttpLimiter<IncomingMessage>(spec.global as HttpOptions<IncomingMessage>, [], undefined);
    const handle = (req: IncomingMessage, res: ServerResponse): void => {
      hits++;
      if (req.url === '/stream') {
        res.setHeader('Content-Type', 'text/event-stream');
        pipeline(sseReadable(req.headers, spec.stream), res, () => undefined);
        return;
      }
      const { status } = answerOf(req.headers);
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ ok: status < 400 }));
    };
    const server = createServer((req, res) => {
      if (http === undefined) return handle(req, res);
      void Promise.resolve(http.decide(req, req.socket.remoteAddress)).then((outcome) => {
        for (const [name, value] of [...outcome.set, ...outcome.append]) res.setHeader(name, value);
        if (outcome.action === 'error') return void res.writeHead(500).end();
        if (outcome.action === 'deny')
          return void res.writeHead(outcome.status, { 'Content-Type': 'application/json' }).end(outcome.json ?? '{}');
        if (outcome.own !== undefined) whenResponseDone(res, (finished) => http.completed(outcome, finished, res.statusCode, [req, res]));
        handle(req, res);
      });
    });
    const served = await serveHttp(server.listen(0, '127.0.0.1'));
    return {
      ...served,
      hits: () => hits,
      close: async () => {
        await served.close();
        if ((spec.global as { limiter?: unknown } | undefined)?.limiter === undefined) await http?.limiter.close();
      },
    };
  },
};

budgetConformance(nodeFactory);
