// What a call attempt means for a sales team (connected, left voicemail, busy, no answer, wrong number, failed):
// ordered rules over the call-detail record's fields, the first match wins; each CRM sink maps the outcome to its own
// status and disposition.
import { z } from 'zod/v4';

export const OUTCOMES = ['connected', 'left_voicemail', 'busy', 'no_answer', 'wrong_number', 'failed'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** A call-detail record as the report gives it (§2.3). */
export interface CallDetail {
  id?: string;
  number: string;
  attempt: number;
  startedAtLocal: string;
  answeredAtLocal: string | null;
  endedAtLocal: string;
  ringResult: string;
  answerType: string | null;
  sipResponseCode: number | null;
  endType: string | null;
  queueId: string | null;
  outcome: string;
}

const oneOrMany = <T extends z.ZodType>(t: T) => z.union([t, z.array(t).min(1)]);

export const ruleSchema = z.strictObject({
  when: z.strictObject({
    ringResult: oneOrMany(z.enum(['Answer', 'NoAnswer', 'Busy', 'CallError'])).optional(),
    answerType: oneOrMany(z.enum(['Human', 'Machine', 'Unknown'])).optional(),
    sipResponseCode: oneOrMany(z.number().int().min(100).max(699)).optional(),
    endType: oneOrMany(z.enum(['HangUp', 'CallflowComplete', 'ExecutionError'])).optional(),
    outcome: oneOrMany(z.enum(['Success', 'FailureWithNoRetryLeft', 'FailureWithRetryPending'])).optional(),
  }),
  then: z.enum(OUTCOMES),
});
export type Rule = z.output<typeof ruleSchema>;

/** The defaults: what a sales team would expect of a dialer's calls. */
export const DEFAULT_RULES: Rule[] = [
  { when: { sipResponseCode: [404, 484, 604] }, then: 'wrong_number' },
  { when: { ringResult: 'Busy' }, then: 'busy' },
  { when: { sipResponseCode: 486 }, then: 'busy' },
  { when: { ringResult: 'NoAnswer' }, then: 'no_answer' },
  { when: { ringResult: 'Answer', answerType: 'Machine' }, then: 'left_voicemail' },
  { when: { ringResult: 'Answer' }, then: 'connected' },
  { when: {}, then: 'failed' },
];

export function outcomeOf(record: CallDetail, rules: Rule[]): Outcome {
  for (const rule of rules) {
    const matches = Object.entries(rule.when).every(([field, wanted]) => {
      const value = (record as unknown as Record<string, unknown>)[field];
      return Array.isArray(wanted) ? wanted.includes(value as never) : value === wanted;
    });
    if (matches) return rule.then;
  }
  return 'failed';
}
