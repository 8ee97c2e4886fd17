// The server benchmark's HTTP client on a thread of its own: it requests list pages over keep-alive connections and
// checks each answer (every one, in full), so the server's event loop (on the main thread) does only the server's work.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { onThread, serveOnThread } from './client-thread.ts';

export interface PageRequest {
  url: string;
  offset: number;
  /** The X-Total-Count the page must carry. */
  total: number;
  size: number;
  sort: [field: 'number' | 'attempts', direction: 'ASC' | 'DESC'];
  /** Names the request in a failure. */
  label: string;
}

export interface PageRun {
  requests: PageRequest[];
  headers: Record<string, string>;
  /** Keep-alive connections working through the requests at once (1: one after another, in order). */
  concurrency: number;
  /** Stop starting requests after this long. */
  maxSeconds: number;
  /** Go round the requests again until maxSeconds (a rate over a fixed time rather than over the list). */
  cycle?: boolean;
}

export interface PageRunResult {
  /** Latency of each request made, request start to parsed body, in the order the requests were given (concurrency 1). */
  ms: number[];
  seconds: number;
  failures: string[];
}

/** Runs one batch of page requests on a worker thread of its own and returns what it measured. */
export function runPages(run: PageRun): Promise<PageRunResult> {
  return onThread(new URL(import.meta.url), run);
}

async function work(run: PageRun): Promise<PageRunResult> {
  const ms: number[] = [];
  const failures: string[] = [];
  const fail = (msg: string) => { if (failures.length < 50) failures.push(msg); };
  const count = run.requests.length;
  let next = 0;
  const started = performance.now();
  const one = async () => {
    const conn = await Connection.open(new URL(run.requests[0]!.url));
    try {
      while ((run.cycle || next < count) && performance.now() - started < run.maxSeconds * 1000) {
        const r = run.requests[next++ % count]!;
        const t = performance.now();
        const res = await conn.get(r.url, run.headers);
        // In the order answered: the order given when one connection asks one after another.
        ms.push(performance.now() - t);
        check(r, res, fail);
      }
    } finally {
      conn.close();
    }
  };
  await Promise.all(Array.from({ length: run.cycle ? run.concurrency : Math.min(run.concurrency, count) }, one));
  return { ms, seconds: (performance.now() - started) / 1000, failures };
}

interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Map<string, string>;
  body: string;
}

/**
 * One keep-alive HTTP/1.1 connection that sends a GET and reads its answer (Content-Length or chunked), one request
 * at a time. The client of a load test must cost far less than the server it loads: fetch() spent almost a core of
 * this 2-core machine on its own bookkeeping, time the server under test then did not get.
 */
class Connection {
  private buffered: Buffer = Buffer.alloc(0);
  private readonly socket: Socket;
  private waiting: (() => void) | null = null;
  private ended: Error | null = null;
  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.buffered = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk;
      this.wake();
    });
    socket.on('error', (err) => { this.ended = err; this.wake(); });
    socket.on('close', () => { this.ended ??= new Error('the server closed the connection'); this.wake(); });
  }

  static async open(url: URL): Promise<Connection> {
    const socket = connect({ host: url.hostname, port: Number(url.port), noDelay: true });
    await once(socket, 'connect');
    return new Connection(socket);
  }

  async get(url: string, headers: Record<string, string>): Promise<RawResponse> {
    const u = new URL(url);
    let head = `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\n`;
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    this.socket.write(`${head}\r\n`);
    const headerEnd = await this.until(() => this.buffered.indexOf('\r\n\r\n'));
    const lines = this.buffered.toString('latin1', 0, headerEnd).split('\r\n');
    this.buffered = this.buffered.subarray(headerEnd + 4);
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(lines[0]!)?.[1] ?? 0);
    const map = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      map.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    let body: Buffer;
    if (map.has('content-length')) {
      const length = Number(map.get('content-length'));
      await this.until(() => (this.buffered.length >= length ? length : -1));
      body = this.buffered.subarray(0, length);
      this.buffered = this.buffered.subarray(length);
    } else if (map.get('transfer-encoding') === 'chunked') {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = await this.until(() => this.buffered.indexOf('\r\n'));
        const size = parseInt(this.buffered.toString('latin1', 0, lineEnd), 16);
        await this.until(() => (this.buffered.length >= lineEnd + 2 + size + 2 ? 0 : -1));
        parts.push(this.buffered.subarray(lineEnd + 2, lineEnd + 2 + size));
        this.buffered = this.buffered.subarray(lineEnd + 2 + size + 2);
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      throw new Error(`answer ${status} has neither Content-Length nor chunked encoding`);
    }
    return { status, headers: map, body: body.toString('utf8') };
  }

  close(): void {
    this.socket.destroy();
  }

  /** Waits for data until `found` returns a position (not -1). */
  private async until(found: () => number): Promise<number> {
    for (;;) {
      const at = found();
      if (at >= 0) return at;
      if (this.ended) throw this.ended;
      await new Promise<void>((resolve) => { this.waiting = resolve; });
    }
  }

  private wake(): void {
    const w = this.waiting;
    this.waiting = null;
    w?.();
  }
}

function check(r: PageRequest, res: RawResponse, fail: (msg: string) => void): void {
  const text = res.body;
  const where = `${r.label} @${r.offset}`;
  if (res.status !== 200) return fail(`${where}: status ${res.status} ${text.slice(0, 200)}`);
  const header = res.headers.get('x-total-count') ?? null;
  if (header === null || !/^\d+$/.test(header)) return fail(`${where}: X-Total-Count is ${JSON.stringify(header)}`);
  if (Number(header) !== r.total) fail(`${where}: X-Total-Count ${header}, expected ${r.total}`);
  const records = JSON.parse(text) as Record<string, string | number>[];
  const want = Math.max(0, Math.min(r.size, r.total - r.offset));
  if (records.length !== want) fail(`${where}: ${records.length} records, expected ${want}`);
  const [field, dir] = r.sort;
  const inOrder = records.every((x, i) => i === 0 || (dir === 'ASC' ? records[i - 1]![field]! <= x[field]! : records[i - 1]![field]! >= x[field]!));
  if (!inOrder) fail(`${where}: records out of order for sort ${JSON.stringify(r.sort)}`);
}

serveOnThread(work);
