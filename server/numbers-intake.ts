// Admits new numbers into a campaign: validates and normalises each, drops duplicates, inserts, reports rejections.
import type { AddNumbersResult, RejectionCode } from '../api/records.ts';
import { ApiError } from './errors.ts';
import { checkPhoneNumber, type PhoneCheck } from './phone-numbers.ts';
import type { CampaignRow } from './store/campaigns.ts';
import type { Store } from './store/store.ts';

export { MAX_VARIABLES, MAX_VAR_VALUE } from '../api/limits.ts';

/** Only an Active Dynamic campaign takes numbers (by JSON or CSV): 409 otherwise. */
export function assertAcceptsNumbers(row: CampaignRow): void {
  if (row.type !== 'Dynamic' || row.state !== 'Active') {
    throw new ApiError('conflict',
      `Numbers can be added only to a Dynamic campaign that is Active; campaign ${JSON.stringify(row.name)} is ${row.type} and ${row.state}`,
      { extensions: { campaignType: row.type, state: row.state } });
  }
}

export interface Candidate {
  /** Where the entry came from: its index in a JSON body or its line in a CSV file. */
  position: number;
  raw: string;
  /** The variable values, or their JSON text (the CSV thread encodes them off the event loop). */
  varValues: readonly string[] | string;
}

export interface Rejection {
  position: number;
  value: string;
  /** A clause that reads after "rejected: " (the n8n node and the 422 detail put it there). */
  reason: string;
  code: RejectionCode;
  /** A duplicate within the batch: the position of the entry it repeats. */
  duplicateOf?: number;
}

/** Where a batch came from, which says how a duplicate names the entry it repeats. */
export type Origin = 'request' | 'file';
const EARLIER: Record<Origin, (position: number) => string> = {
  request: (index) => `entry ${index} of this request`,
  file: (line) => `line ${line} of this file`,
};

export interface Admitted {
  position: number;
  id: number;
  number: string;
}

/**
 * Validates (unless checks of the batch's numbers are given), normalises and inserts a batch in one transaction. A phone number already live in
 * the campaign, or earlier in the same batch, is rejected as a duplicate.
 */
export function admit(store: Store, campaignPk: number, varNames: string[], batch: readonly Candidate[],
  checks: readonly PhoneCheck[] = batch.map((c) => checkPhoneNumber(c.raw)), origin: Origin = 'request'): { admitted: Admitted[]; rejected: Rejection[] } {
  const rejected: Rejection[] = [];
  const valid: { c: Candidate; e164: string }[] = [];
  const seen = new Map<string, number>();
  for (const [i, c] of batch.entries()) {
    const check = checks[i]!;
    if (!check.ok) { rejected.push({ position: c.position, value: c.raw, reason: check.reason, code: 'invalid_number' }); continue; }
    const earlier = seen.get(check.e164);
    if (earlier !== undefined) {
      rejected.push({
        position: c.position, value: c.raw, reason: `${check.e164} duplicates ${EARLIER[origin](earlier)}`, code: 'duplicate', duplicateOf: earlier,
      });
      continue;
    }
    seen.set(check.e164, c.position);
    valid.push({ c, e164: check.e164 });
  }
  const ids = store.numbers.insert(campaignPk, valid.map((v) => ({ number: v.e164, varNames, varValues: v.c.varValues })));
  const admitted: Admitted[] = [];
  ids.forEach((id, i) => {
    const { c, e164 } = valid[i]!;
    if (id === null) rejected.push({ position: c.position, value: c.raw, reason: `${e164} is already in this campaign`, code: 'duplicate' });
    else admitted.push({ position: c.position, id, number: e164 });
  });
  rejected.sort((a, b) => a.position - b.position);
  return { admitted, rejected };
}

/** A rejection as the answer of a JSON add lists it: by its index in the body. */
export function rejectedEntry(r: Rejection): AddNumbersResult['rejected'][number] {
  return { index: r.position, number: r.value, reason: r.reason, code: r.code, ...(r.duplicateOf === undefined ? {} : { duplicateOf: r.duplicateOf }) };
}
