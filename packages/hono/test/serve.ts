import type { Server } from 'node:http';
import type { Hono } from 'hono';
import { createAdaptorServer } from '@hono/node-server';
import { serveHttp } from '@floodgate/testing';

/** Serves a Hono app on @hono/node-server over a loopback port: its URL and a close(). */
export async function serveHono(app: Pick<Hono, 'fetch'>): Promise<{ url: string; close(): Promise<void> }> {
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  return serveHttp(server.listen(0, '127.0.0.1'));
}
