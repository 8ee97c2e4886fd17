// A small OTLP/HTTP trace receiver for the demo: POST /v1/traces with JSON bodies, each span appended as one JSON line
// to a file that `./dev daemon trace` reads. A stand-in for a tracing backend (Jaeger, Tempo, Honeycomb): it speaks
// OTLP/HTTP as they do, so the same OTEL_* settings point the processes at either. Plain node:http: it needs no
// routing, and reading the body itself lets it cap the size before and after gzip.
// Alone: `node daemon/traces/receiver.ts [--port 4318] [--host 127.0.0.1] [--file traces.jsonl]`.
import { appendFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { gunzip } from 'node:zlib';
import { BadRequest, decodeTraceRequest } from './spans.ts';

/** The limit OTLP recommends for a request body, before and after decompression. */
export const MAX_BODY_BYTES = 20 * 1024 * 1024;

export interface TraceReceiverOptions {
  /** The JSON-lines file spans are appended to (created when missing). */
  file: string;
  /** Default 0 (a free port). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  maxBodyBytes?: number;
}

export interface TraceReceiver {
  /** The base URL, e.g. http://127.0.0.1:4318: what OTEL_EXPORTER_OTLP_ENDPOINT takes. */
  url: string;
  file: string;
  /** Spans written to the file so far. */
  written(): number;
  /** Stops accepting requests and waits for the writes already accepted. */
  close(): Promise<void>;
}

/** google.rpc.Code of each failure status (OTLP leaves Status.code informative only). */
const RPC_CODE: Record<number, number> = { 400: 3, 404: 5, 405: 12, 413: 8, 415: 3, 503: 14 };

class Refusal extends Error {
  readonly status: number;
  constructor(status: number, message: string) { super(message); this.status = status; }
}

/** A google.rpc.Status in protobuf's wire format: field 1 code (varint), field 2 message (bytes). */
function protobufStatus(code: number, message: string): Buffer {
  const text = Buffer.from(message);
  const varint = (n: number): number[] => { const out = []; while (n > 0x7f) { out.push((n & 0x7f) | 0x80); n >>>= 7; } out.push(n); return out; };
  return Buffer.concat([Buffer.from([0x08, ...varint(code), 0x12, ...varint(text.length)]), text]);
}

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** The body, capped: a declared length over the cap is refused before reading, a stream that grows past it midway. */
async function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const tooLarge = () => new Refusal(413, `the body is larger than ${max} bytes; send smaller batches (the exporter's OTEL_BSP_MAX_EXPORT_BATCH_SIZE)`);
  if (Number(req.headers['content-length'] ?? 0) > max) throw tooLarge();
  // Read by events, not by async iteration: leaving an iteration early destroys the socket the 413 goes out on.
  const raw = await new Promise<Buffer>((ok, fail) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) { chunks.push(chunk); return; }
      req.off('data', onData);
      req.resume();
      fail(tooLarge());
    };
    req.on('data', onData);
    req.once('end', () => ok(Buffer.concat(chunks)));
    req.once('error', fail);
  });
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return raw;
  if (encoding !== 'gzip') throw new Refusal(415, `Content-Encoding ${encoding} is not supported; send gzip or no encoding`);
  return new Promise((ok, fail) => gunzip(raw, { maxOutputLength: max }, (err, out) => {
    if (!err) ok(out);
    else fail((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? tooLarge() : new Refusal(400, `the body is not valid gzip: ${err.message}`));
  }));
}

export function startTraceReceiver(options: TraceReceiverOptions): Promise<TraceReceiver> {
  const file = resolve(options.file);
  const max = options.maxBodyBytes ?? MAX_BODY_BYTES;
  let written = 0;
  // One write at a time, in arrival order: lines of two requests never interleave.
  let writes: Promise<unknown> = Promise.resolve();

  const answer = (res: ServerResponse, status: number, body: unknown, protobuf = false) => {
    if (res.headersSent) return;
    if (protobuf) {
      const message = (body as { message: string }).message;
      res.writeHead(status, { 'content-type': 'application/x-protobuf' }).end(protobufStatus(RPC_CODE[status] ?? 2, message));
    } else {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/v1/traces') {
      throw new Refusal(404, `this receiver keeps traces only: POST /v1/traces (set OTEL_METRICS_EXPORTER=none and OTEL_LOGS_EXPORTER=none, or send those elsewhere)`);
    }
    if (req.method !== 'POST') { res.setHeader('allow', 'POST'); throw new Refusal(405, `${req.method} /v1/traces: only POST is accepted`); }
    const type = mediaType(req);
    if (type === 'application/x-protobuf' || type === 'application/protobuf') {
      throw new Refusal(415, 'this receiver reads OTLP/HTTP JSON only: set OTEL_EXPORTER_OTLP_PROTOCOL=http/json (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)');
    }
    if (type !== 'application/json') throw new Refusal(415, `Content-Type ${type || '(none)'} is not supported: send application/json (OTLP/HTTP JSON)`);
    const text = (await readBody(req, max)).toString('utf8');
    let body: unknown;
    try {
      body = text.trim() === '' ? {} : JSON.parse(text);
    } catch (err) {
      throw new Refusal(400, `the body is not JSON: ${(err as Error).message}`);
    }
    let decoded;
    try {
      decoded = decodeTraceRequest(body);
    } catch (err) {
      if (err instanceof BadRequest) throw new Refusal(400, `not an OTLP ExportTraceServiceRequest: ${err.message}`);
      throw err;
    }
    if (decoded.spans.length) {
      const lines = decoded.spans.map((s) => `${JSON.stringify(s)}\n`).join('');
      const write = writes.then(() => appendFile(file, lines));
      writes = write.catch(() => {});
      try {
        await write;
      } catch (err) {
        // Retryable (503): the exporter sends the batch again once the file can be written.
        throw new Refusal(503, `could not write ${file}: ${(err as Error).message}`);
      }
      written += decoded.spans.length;
    }
    const { rejected } = decoded;
    // Rejected spans are counted and named, the rest kept: OTLP's partial success (the client does not retry it).
    answer(res, 200, {
      partialSuccess: rejected.length
        ? { rejectedSpans: String(rejected.length), errorMessage: `${rejected.length} span${rejected.length > 1 ? 's' : ''} rejected: ${rejected.slice(0, 5).join('; ')}${rejected.length > 5 ? '; …' : ''}` }
        : {},
    });
  };

  const server = createServer((req, res) => {
    const protobuf = /protobuf/.test(mediaType(req));
    req.on('error', () => {});
    handle(req, res).catch((err: unknown) => {
      const refusal = err instanceof Refusal ? err : new Refusal(503, `the receiver failed: ${(err as Error).message}`);
      // What the client still sends is discarded, and the connection closes after the answer.
      if (!req.readableEnded) { res.setHeader('connection', 'close'); req.resume(); }
      answer(res, refusal.status, { code: RPC_CODE[refusal.status] ?? 2, message: refusal.message }, protobuf);
    });
  });
  server.on('clientError', (_err, socket) => { socket.destroy(); });

  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      const { address, port } = server.address() as AddressInfo;
      const host = address.includes(':') ? `[${address}]` : address;
      ok({
        url: `http://${host}:${port}`, file,
        written: () => written,
        close: () => new Promise<void>((done) => {
          server.close(() => void writes.then(() => done()));
          server.closeIdleConnections();
        }),
      });
    });
  });
}

async function main(): Promise<void> {
  const usage = 'usage: node daemon/traces/receiver.ts [--port 4318] [--host 127.0.0.1] [--file traces.jsonl]';
  let values;
  try {
    ({ values } = parseArgs({ options: { port: { type: 'string', default: '4318' }, host: { type: 'string', default: '127.0.0.1' }, file: { type: 'string', default: 'traces.jsonl' }, help: { type: 'boolean', short: 'h' } } }));
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    process.exit(2);
  }
  if (values.help) { console.log(usage); return; }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) { console.error(`--port must be from 0 to 65535; got ${values.port}\n${usage}`); process.exit(2); }
  const receiver = await startTraceReceiver({ port, host: values.host, file: values.file });
  console.log(`trace receiver listening on ${receiver.url} (POST /v1/traces, OTLP/HTTP JSON), writing ${receiver.file}`);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => void receiver.close().then(() => {
      console.log(`trace receiver stopped; ${receiver.written()} spans written`);
      process.exit(0);
    }));
  }
}

if (import.meta.main) await main();
