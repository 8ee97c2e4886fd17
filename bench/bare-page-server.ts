// The ceiling of the page benchmark: a bare node:http server that answers every request with the same bytes and
// headers as one real page of the server, doing no work for it. What a client gets from it is the most that client
// and this machine's loopback and HTTP parsing allow; the reference server's rate reads against it.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BarePageServer {
  /** http://127.0.0.1:port */
  base: string;
  close(): Promise<void>;
}

/** Listens on a free loopback port and answers every request with `body` and `headers`, status 200. */
export async function startBarePageServer(body: Buffer, headers: Record<string, string>): Promise<BarePageServer> {
  const all = { ...headers, 'content-length': String(body.length) };
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, all);
    response.end(body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
