// The dialer's clock (config `dialerClock`, the demo's): calling windows judged by the reference server's simulation
// clock, read over HTTP and carried forward at its speed; a clock that cannot be read, or one too fast for the
// window's checks, stops the start with a sentence.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import { ConfigError, parseConfig } from '../../daemon/config.ts';
import { followDialerClock } from '../../daemon/dialer-clock.ts';
import { quietLog, REDIS_URL, testPrefix, waitFor } from '../support/daemon.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { startServerCli } from '../support/server-cli.ts';

const START = '2026-12-01T17:00:00.000Z';

describe('on a manual clock', () => {
  let server: TestServer;
  beforeAll(async () => { server = await startServer({ clockStart: START, clockMode: 'manual' }); });
  afterAll(async () => { await server.close(); });

  it('tells the server\'s time, stands still between readings, and follows an advance at the next reading', async () => {
    const clock = await followDialerClock({ url: `${server.url}/console/clock`, token: server.consoleToken, every: 1000 }, (err) => { throw err; });
    try {
      expect(new Date(clock.now()).toISOString()).toBe(START);
      expect(clock.speed).toBe(0);
      await server.advance(3600);
      const after = await waitFor(() => clock.now() > Date.parse(START) && clock.now(), 'the next reading', 5000);
      expect(new Date(after).toISOString()).toBe('2026-12-01T18:00:00.000Z');
    } finally {
      clock.stop();
    }
  });

  it('refuses a clock it cannot read, naming the URL and the answer', async () => {
    await expect(followDialerClock({ url: `${server.url}/console/clock`, token: 'wrong', every: 1000 }, () => {}))
      .rejects.toThrow(new RegExp(`^dialerClock: GET ${server.url}/console/clock answered 401`));
    await expect(followDialerClock({ url: `${server.url}/health`, token: server.consoleToken, every: 1000 }, () => {}))
      .rejects.toThrow(/dialerClock: GET .*\/health answered (404|no clock)/);
  });
});

it('carries a real-time clock forward at its speed, as the server moves it', async () => {
  const server = await startServerCli(['--port', '0', '--speed', '600', '--start', START], { CONSOLE_TOKEN: 'console_dialer_clock_test_token' });
  try {
    const url = `${server.base}/console/clock`;
    const clock = await followDialerClock({ url, token: 'console_dialer_clock_test_token', every: 60_000 }, (err) => { throw err; });
    try {
      expect(clock.speed).toBe(600);
      // Between readings the daemon's clock runs on at 600x: compared with the server's own, read after it.
      const first = clock.now();
      const server1 = await fetch(url, { headers: { authorization: 'Bearer console_dialer_clock_test_token' } }).then((r) => r.json() as Promise<{ now: string }>);
      const second = clock.now();
      expect(second).toBeGreaterThan(first);
      // The server's clock moves in 50 ms ticks (30 s at 600x); the two stay within a tick and a request of each other.
      expect(Math.abs(Date.parse(server1.now) - second)).toBeLessThan(60_000);
    } finally {
      clock.stop();
    }
  } finally {
    await server.stop();
  }
});

it('Daemon.start refuses a margin shorter than what the dialer\'s clock runs between two checks', async () => {
  const server = await startServer({ clockStart: START, clockMode: 'realtime', clockSpeed: 600 });
  const { prefix, cleanup } = testPrefix();
  try {
    const config = parseConfig({
      redis: { url: REDIS_URL, prefix }, http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: server.url, accountId: 'a', apiToken: 't' },
      compliance: { checkEvery: '1s', margin: '2m' },
      dialerClock: { url: `${server.url}/console/clock`, token: server.consoleToken },
      syncs: [{ id: 's', campaignId: 'c', source: { type: 'csv', path: '/nonexistent.csv' }, mapping: { phone: 'phone' } }],
    }, 'test', {});
    const started = Daemon.start(config, { log: quietLog, http: false, workers: false, schedules: false });
    await expect(started).rejects.toThrow(ConfigError);
    await expect(started).rejects.toThrow(/compliance\.margin \(120s of the dialer's clock\) must be longer than checkEvery \(1s\) times the dialer clock's speed \(600\)/);
  } finally {
    await server.close();
    await cleanup();
  }
});
