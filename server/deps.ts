// What the routes share of the server: its services (store, clock, dialer, events, validator, CSV thread), its size
// limits and the request guard. app.ts builds them and registers the routes; the routes import this, never app.ts.
import type { FastifyRequest } from 'fastify';
import type { Operation } from '../api/enums.ts';
import type { SimulationClock } from './clock.ts';
import type { CsvThread } from './csv-thread.ts';
import type { Dialer } from './dialer/dialer.ts';
import type { Events } from './events.ts';
import type { PhoneValidator } from './phone-validator.ts';
import type { Account, KeyRecord } from './store/accounts.ts';
import type { Store } from './store/store.ts';

export interface Limits {
  /** Largest JSON body. */
  jsonBodyBytes: number;
  /** Largest CSV upload (the whole multipart body). */
  uploadBytes: number;
  /** Most numbers in one POST .../numbers. */
  numbersPerRequest: number;
  /** Most campaign ids in one DELETE .../campaigns, and number ids in one DELETE .../numbers. */
  idsPerDelete: number;
}

export const DEFAULT_LIMITS: Limits = {
  jsonBodyBytes: 10 * 1024 * 1024,
  uploadBytes: 512 * 1024 * 1024,
  numbersPerRequest: 10_000,
  idsPerDelete: 10_000,
};

export interface Deps {
  store: Store;
  clock: SimulationClock;
  clockMode: 'manual' | 'realtime';
  /** Simulated seconds per real second of a real-time clock. */
  clockSpeed: number;
  dialer: Dialer;
  events: Events;
  validator: PhoneValidator;
  /** Parses CSV uploads off the event loop. */
  csv: CsvThread;
  limits: Limits;
  now: () => Date;
  /** The account and key of an API request, after 401/403 checks for the operation. */
  guard(request: FastifyRequest, op: Operation): { account: Account; key: KeyRecord };
}
