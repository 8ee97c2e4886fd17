// The clock calling windows are judged by when the dialer keeps time of its own (the reference server's simulation
// clock, sped up in the demo): read from the dialer, and carried forward at its speed between readings. Without the
// `dialerClock` block the daemon judges windows by the real clock, as every real deployment does.
import { z } from 'zod/v4';

/** What the clock endpoint answers (the reference server's GET /console/clock): the time, and simulated seconds per real second (null: a manual clock that moves only when told). */
const reading = z.object({ now: z.iso.datetime({ offset: true }), speed: z.number().positive().nullable() });

export interface DialerClockConfig { url: string; token: string; every: number }

export interface DialerClock {
  /** The dialer's time now, in epoch ms. */
  now(): number;
  /** Simulated ms per real ms (0 on a manual clock). */
  readonly speed: number;
  stop(): void;
}

async function read(c: DialerClockConfig): Promise<{ at: number; now: number; speed: number }> {
  const res = await fetch(c.url, { headers: { authorization: `Bearer ${c.token}` }, signal: AbortSignal.timeout(5000) });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`dialerClock: GET ${c.url} answered ${res.status}: ${body.slice(0, 200)}`);
  const parsed = reading.safeParse(JSON.parse(body));
  if (!parsed.success) throw new Error(`dialerClock: GET ${c.url} answered no clock ({"now": ISO time, "speed": number or null}): ${body.slice(0, 200)}`);
  return { at: Date.now(), now: Date.parse(parsed.data.now), speed: parsed.data.speed ?? 0 };
}

/**
 * Reads the dialer's clock once (a clock that cannot be read stops the start: windows judged by the wrong clock
 * would dial outside them), then again every `every`; a failed re-reading keeps the last one carried forward.
 */
export async function followDialerClock(c: DialerClockConfig, onError: (err: Error) => void): Promise<DialerClock> {
  let last = await read(c);
  const timer = setInterval(() => {
    read(c).then((r) => { last = r; }, onError);
  }, c.every);
  timer.unref();
  return {
    // Never behind a reading already given: a re-reading a little behind the extrapolation does not move time back.
    now: (() => {
      let given = 0;
      return () => (given = Math.max(given, last.now + (Date.now() - last.at) * last.speed));
    })(),
    get speed() { return last.speed; },
    stop: () => clearInterval(timer),
  };
}
