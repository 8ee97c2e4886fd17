// `--outcomes FILE`: a JSON document overriding parts of the outcome model, validated before the server starts.
import { readFileSync } from 'node:fs';
import { z } from 'zod/v4';
import { ANSWER_TYPES, RING_RESULTS } from '../../api/enums.ts';
import { DEFAULT_OUTCOMES, type OutcomeModel } from './model.ts';

const weight = z.number().min(0).max(1e6);
const weights = <K extends string>(keys: readonly K[]) => z.strictObject(Object.fromEntries(keys.map((k) => [k, weight.optional()])) as Record<K, z.ZodOptional<typeof weight>>);
const sipWeights = z.record(z.string().regex(/^[1-6]\d\d$/, 'must be a SIP code'), weight);

const OutcomesFile = z.strictObject({
  ringResult: weights(RING_RESULTS).optional(),
  answerType: weights(ANSWER_TYPES).optional(),
  sip: z.strictObject({ Busy: sipWeights.optional(), NoAnswer: sipWeights.optional(), CallError: sipWeights.optional() }).optional(),
  ringSeconds: z.strictObject(Object.fromEntries(RING_RESULTS.map((k) => [k, z.number().min(0).max(600).optional()])) as Record<string, z.ZodOptional<z.ZodNumber>>).optional(),
  machineSeconds: z.number().min(0).max(600).optional(),
  hangUpShare: z.number().min(0).max(1).optional(),
  executionErrorShare: z.number().min(0).max(1).optional(),
});

/** The outcome model with the file's values over the defaults; throws an Error naming each bad field. */
export function readOutcomes(path: string): OutcomeModel {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read ${path} as JSON: ${(err as Error).message}`);
  }
  const r = OutcomesFile.safeParse(json);
  if (!r.success) throw new Error(`${path}: ${r.error.issues.map((i) => `${i.path.join('.') || 'document'}: ${i.message}`).join('; ')}`);
  const f = r.data;
  const merge = <T extends object>(base: T, over: object | undefined): T =>
    ({ ...base, ...Object.fromEntries(Object.entries(over ?? {}).filter(([, v]) => v !== undefined)) });
  return {
    ringResult: merge(DEFAULT_OUTCOMES.ringResult, f.ringResult),
    answerType: merge(DEFAULT_OUTCOMES.answerType, f.answerType),
    sip: {
      Busy: f.sip?.Busy ?? DEFAULT_OUTCOMES.sip.Busy,
      NoAnswer: f.sip?.NoAnswer ?? DEFAULT_OUTCOMES.sip.NoAnswer,
      CallError: f.sip?.CallError ?? DEFAULT_OUTCOMES.sip.CallError,
    },
    ringSeconds: merge(DEFAULT_OUTCOMES.ringSeconds, f.ringSeconds),
    machineSeconds: f.machineSeconds ?? DEFAULT_OUTCOMES.machineSeconds,
    hangUpShare: f.hangUpShare ?? DEFAULT_OUTCOMES.hangUpShare,
    executionErrorShare: f.executionErrorShare ?? DEFAULT_OUTCOMES.executionErrorShare,
  };
}
