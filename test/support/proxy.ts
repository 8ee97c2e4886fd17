// A loopback HTTP proxy in front of a test server: records every request and answer, and can answer some itself.
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Exchange {
  method: string;
  path: string;
  status: number;
}

export interface Answer { status: number; headers?: Record<string, string>; body?: string }

export interface Proxy {
  url: string;
  exchanges: Exchange[];
  /** Answers matching requests itself (status, headers, body) instead of forwarding them. */
  intercept: ((req: IncomingMessage) => Answer | undefined) | null;
  /** As intercept, but sees the request's body whole first (the request is forwarded with it when this answers nothing). */
  interceptWithBody: ((req: IncomingMessage, body: Buffer) => Answer | undefined) | null;
  /** Rewrites the path (and query) of each forwarded request, e.g. to play a server that serves smaller pages. */
  rewritePath: ((path: string) => string) | null;
  /**
   * Sees each upstream answer (its body whole) before it is relayed: returning 'drop' cuts the connection instead, and
   * an answer of its own is sent in its place (the upstream has done the work; the client hears otherwise).
   */
  onAnswer: ((exchange: Exchange, body: Buffer, req?: IncomingMessage) => 'drop' | { status: number; body?: string } | void) | null;
  /**
   * Holds matching requests: `before` until the returned promise settles, then forwards them; `after` holds the
   * upstream's answer (the upstream has done the work) until the promise settles, then relays it. To stop a client at
   * an exact point of an exchange, e.g. while a fault is made.
   */
  hold: ((req: IncomingMessage) => { before?: Promise<void>; after?: Promise<void> } | undefined) | null;
  /** While set, upstream answers (already recorded in `exchanges`) wait for it before they are relayed. */
  holdAnswers: Promise<void> | null;
  close(): Promise<void>;
}

export async function startProxy(target: string): Promise<Proxy> {
  const proxy: Proxy = { url: '', exchanges: [], intercept: null, interceptWithBody: null, rewritePath: null, onAnswer: null, hold: null, holdAnswers: null, close: async () => {} };
  const server = createServer((req, res) => {
    const answerWith = (answer: Answer) => {
      proxy.exchanges.push({ method: req.method!, path: req.url!, status: answer.status });
      res.writeHead(answer.status, answer.headers).end(answer.body ?? '');
    };
    const answer = proxy.intercept?.(req);
    if (answer) {
      req.resume();
      answerWith(answer);
      return;
    }
    if (proxy.interceptWithBody) {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const own = proxy.interceptWithBody?.(req, body);
        if (own) answerWith(own);
        else forward(body);
      });
      return;
    }
    forward(null);

    function forward(buffered: Buffer | null) {
      const held = proxy.hold?.(req);
      if (held?.before) {
        const chunks: Buffer[] = [];
        if (!buffered) req.on('data', (c: Buffer) => chunks.push(c));
        const body = buffered;
        void Promise.all([held.before, body ? null : new Promise((r) => req.on('end', r))]).then(() => send(body ?? Buffer.concat(chunks), held.after));
        return;
      }
      send(buffered, held?.after);
    }

    function send(buffered: Buffer | null, after: Promise<void> | undefined) {
      const upstream = httpRequest(new URL(proxy.rewritePath?.(req.url!) ?? req.url!, target), { method: req.method, headers: req.headers }, (up) => {
        const exchange = { method: req.method!, path: req.url!, status: up.statusCode! };
        proxy.exchanges.push(exchange);
        // An answer held back for this request (hold's `after`), or all answers while holdAnswers is set.
        const held = after ?? proxy.holdAnswers;
        if (!proxy.onAnswer && !held) {
          res.writeHead(up.statusCode!, up.headers);
          up.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        up.on('data', (c: Buffer) => chunks.push(c));
        up.on('end', async () => {
          await held;
          const body = Buffer.concat(chunks);
          const verdict = proxy.onAnswer?.(exchange, body, req);
          if (verdict === 'drop') {
            res.destroy();
            return;
          }
          if (verdict) {
            res.writeHead(verdict.status, { 'content-type': 'application/json' }).end(verdict.body ?? '{"message":"upstream failed"}');
            return;
          }
          res.writeHead(up.statusCode!, up.headers);
          res.end(body);
        });
      });
      upstream.on('error', (error) => res.writeHead(502).end(String(error)));
      if (buffered) upstream.end(buffered);
      else req.pipe(upstream);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });
  return proxy;
}
