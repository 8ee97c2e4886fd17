// A real OTLP/HTTP receiver on loopback for tests: keeps every JSON body POSTed to /v1/traces and flattens its spans.
import { createServer, type Server } from 'node:http';

export interface ReceivedSpan {
  service: string; traceId: string; spanId: string; parentSpanId: string; name: string; kind: number;
  attributes: Record<string, unknown>; links: { traceId: string; spanId: string }[]; events: string[];
}

function value(v: any): unknown {
  if (!v) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('boolValue' in v) return v.boolValue;
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(value);
  return undefined;
}

const attrs = (list: any[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));

export interface OtlpReceiver { url: string; spans(): ReceivedSpan[]; close(): Promise<void> }

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).includes('json')) {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const rs of body.resourceSpans ?? []) {
        const service = String(attrs(rs.resource?.attributes)['service.name'] ?? '');
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            received.push({ service, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', name: s.name, kind: s.kind,
              attributes: attrs(s.attributes), links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId })),
              events: (s.events ?? []).map((e: any) => e.name) });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = server.address() as { port: number };
  return { url: `http://127.0.0.1:${a.port}`, spans: () => received, close: () => new Promise((r) => server.close(() => r())) };
}
