// `./dev daemon trace <phone number>` over hand-written span lines (fixtures/traces.jsonl, the receiver's format): the
// number's traces and the traces linked to them as timelines, other numbers' spans left out, and clear sentences when
// the file or the number is not there.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { formatMs, traceNumber } from '../../daemon/traces/timeline.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE = join(ROOT, 'test/daemon/fixtures/traces.jsonl');
const ADD = '4bf92f3577b34da6a3ce929d0e0e4736';
const MIRROR = '7d2c1e4f9a8b0c3d5e6f708192a3b4c5';
const RESUMED = '9a8b7c6d5e4f30211203f4e5d6c7b8a9';
const OTHER_LINKED = 'c0ffee00c0ffee00c0ffee00c0ffee01';
const OTHER = '5f1e2d3c4b5a69788796a5b4c3d2e1f0';
const dir = mkdtempSync(join(tmpdir(), 'cds-trace-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['daemon/cli.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (b: Buffer) => { stdout += b.toString(); });
    child.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The trace ids of the headers, in the order printed. */
const printed = (text: string) => [...text.matchAll(/^trace ([0-9a-f]{32})/gm)].map((m) => m[1]);

describe('daemon trace', () => {
  it('prints the number\'s traces and the trace linked to them as indented timelines, from the command line', async () => {
    // Typed as a person would, without the country code: normalised to +12125550199 as the sync normalises numbers.
    const { code, stdout, stderr } = await cli(['trace', '(212) 555-0199', '--file', FIXTURE]);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('+12125550199: 3 traces (2 carrying the number, 1 linked)');
    // In order of start: the add, the resumed push linked to it (carries no number), the mirror 95 s later.
    expect(printed(stdout)).toEqual([ADD, RESUMED, MIRROR]);
    const add = stdout.split('\n\n')[1]!.split('\n');
    expect(add[0]).toBe(`trace ${ADD} (2 services, 410 ms, from 2026-11-26T08:00:00.000Z)`);
    // Each span under its parent (two spaces a level), offset from the trace's start, duration, service, key attributes.
    expect(add[1]).toMatch(/^ {2}\+0 ms +6 ms {2}campaign-sync {12}webhook hubspot {3}cds\.sync=demo http=204$/);
    expect(add[2]).toMatch(/^ {2}\+3 ms +180 ms {2}campaign-sync {14}sync run {3}cds\.sync=demo cds\.run=12$/);
    expect(add[4]).toMatch(/\+60 ms +350 ms {2}campaign-sync {18}push batch {3}cds\.sync=demo cds\.batch=b-7 cds\.campaign=cmp-1 cds\.phones=\[\+12125550199,\+13125550123\]$/);
    // A client span's rate-limit wait is an event line under it; the server's span nests under the dialer request.
    expect(add[5]).toMatch(/\+62 ms +343 ms {2}campaign-sync {20}dialer POST \/v1\/accounts\/\{accountId\}\/campaigns\/\{campaignId\}\/numbers {3}http=201$/);
    expect(add[6]).toMatch(/^ {2}\+62 ms {4,}· rate-limit wait {3}wait_ms=300$/);
    expect(add[7]).toMatch(/\+366 ms +35 ms {2}campaign-dialing-server {12}POST \/v1\/accounts\/:accountId\/campaigns\/:campaignId\/numbers {3}http=201$/);
    const mirror = stdout.slice(stdout.indexOf(`trace ${MIRROR}`));
    expect(mirror).toContain(`↳ linked to trace ${ADD} (push batch)`);
    expect(mirror).toMatch(/mirror write {3}cds\.sync=demo cds\.phone=\+12125550199 cds\.attempt_keys=\[a-81\]/);
    // The other number's write (and its CRM request) is not this number's story: counted, not shown.
    expect(mirror).not.toContain('+13125550123');
    expect(mirror).not.toContain('503');
    expect(mirror).toContain('(2 spans about other numbers not shown)');
    // The torn last line (a receiver killed mid-write) is skipped and said.
    expect(stdout).toContain('1 line of the file is not a span (first: line 16); skipped.');
    // Typed with spaces and not quoted: the same number.
    expect((await cli(['trace', '+1', '212', '555', '0199', '--file', FIXTURE])).stdout).toBe(stdout);
  });

  it('leaves out a linked trace that is about other numbers only, and keeps the number\'s own', async () => {
    const a = await traceNumber({ phone: '+14155550100', file: FIXTURE });
    expect(a.code).toBe(0);
    // OTHER_LINKED links to the add trace, which carries other numbers only: not followed.
    expect(printed(a.text)).toEqual([OTHER_LINKED, OTHER]);
    expect(a.text).toContain('+14155550100: 2 traces (2 carrying the number)');
    expect(a.text).toContain(`↳ linked to trace ${ADD}\n`);
  });

  it('--since keeps the traces whose spans of the number started since then', async () => {
    const a = await traceNumber({ phone: '+12125550199', file: FIXTURE, since: '2026-11-26T08:01:00Z' });
    expect(printed(a.text)).toEqual([MIRROR]);
    // A duration counts back from now.
    const b = await traceNumber({ phone: '+12125550199', file: FIXTURE, since: '40s' }, Date.parse('2026-11-26T08:01:30Z'));
    expect(printed(b.text)).toEqual([MIRROR]);
    const none = await traceNumber({ phone: '+12125550199', file: FIXTURE, since: '1m' }, Date.parse('2026-11-26T09:00:00Z'));
    expect(none).toMatchObject({ code: 1, text: expect.stringContaining('since 2026-11-26T08:59:00.000Z') });
    expect(await traceNumber({ phone: '+12125550199', file: FIXTURE, since: 'yesterday' })).toEqual({
      code: 2, text: '--since takes an ISO time (2026-11-26T08:00:00Z) or a duration back from now (30m, 2h, 1d); got "yesterday"',
    });
  });

  it('says so when the number is found nowhere, the file is missing, or the number is not one', async () => {
    const nowhere = await cli(['trace', '+442079460000', '--file', FIXTURE]);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stdout).toBe('');
    expect(nowhere.stderr).toContain(`no span in ${FIXTURE} carries +442079460000 (cds.phone or cds.phones): 15 spans read, from 2026-11-26T08:00:00.000Z to 2026-11-26T08:01:35.180Z.`);

    const missing = await cli(['trace', '+12125550199', '--file', join(dir, 'none.jsonl')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no trace file at ${join(dir, 'none.jsonl')}: run the demo with tracing (./dev start --traces writes traces.jsonl)`);

    // Spans, but none with a phone number: the daemon is probably not exporting its own.
    const serverOnly = join(dir, 'server-only.jsonl');
    writeFileSync(serverOnly, `${JSON.stringify({ traceId: ADD, spanId: '5e6f708192a3b4c5', name: 'GET /v1/health', kind: 'server', service: 'campaign-dialing-server', startMs: 1, endMs: 2, attributes: {}, events: [], links: [] })}\n`);
    expect((await traceNumber({ phone: '+12125550199', file: serverOnly })).text).toContain('No span carries a phone number at all: is the daemon exporting its traces (OTEL_EXPORTER_OTLP_ENDPOINT)?');

    const bad = await cli(['trace', '12', '--file', FIXTURE]);
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringContaining('"12" is not a phone number (not a valid number for US)') });
    expect(await traceNumber({ phone: '020 7946 0000', file: FIXTURE, country: 'XX' })).toMatchObject({ code: 2, text: expect.stringContaining('--country takes a two-letter country code') });
    // With its country, a national number is found as its E.164 form.
    expect((await traceNumber({ phone: '020 7946 0000', file: FIXTURE, country: 'gb' })).text).toContain('carries +442079460000');

    const noNumber = await cli(['trace', '--file', FIXTURE]);
    expect(noNumber).toMatchObject({ code: 2, stderr: expect.stringContaining('which phone number?') });
  });

  it('writes durations in the unit that reads best', () => {
    expect([formatMs(0.4), formatMs(412), formatMs(9_999), formatMs(12_400), formatMs(186_000)]).toEqual(['0 ms', '412 ms', '9999 ms', '12.4 s', '3.1 min']);
  });
});
