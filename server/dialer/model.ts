// The dialer's model: campaign dialing settings and the distributions call outcomes are drawn from.
import type { AnswerType, RingResult } from '../../api/enums.ts';
import type { DialerSettings } from '../../api/records.ts';

export type { DialerSettings };

export const DEFAULT_SETTINGS: DialerSettings = {
  agents: 5,
  linesPerAgent: 1,
  talkSeconds: 120,
  wrapUpSeconds: 10,
  maxAttempts: 3,
  retryDelaySeconds: { NoAnswer: 3600, Busy: 900, CallError: 1800, Machine: 7200, Abandoned: 600 },
  // the US (FCC) and UK (Ofcom) limit
  abandonRateTarget: 0.03,
  // US rules allow 08:00-21:00 at the called party; a real list has numbers in several zones, so a day earlier ends
  callingHours: { from: '09:00', to: '20:00', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] },
};

export interface OutcomeModel {
  ringResult: Record<RingResult, number>;
  answerType: Record<AnswerType, number>;
  sip: { Busy: Record<number, number>; NoAnswer: Record<number, number>; CallError: Record<number, number> };
  /** Mean seconds of ringing before each result. */
  ringSeconds: Record<RingResult, number>;
  machineSeconds: number;
  /** Share of connected human calls the caller ends (HangUp) rather than the call flow. */
  hangUpShare: number;
  executionErrorShare: number;
}

export const DEFAULT_OUTCOMES: OutcomeModel = {
  ringResult: { Answer: 45, NoAnswer: 30, Busy: 15, CallError: 10 },
  answerType: { Human: 70, Machine: 25, Unknown: 5 },
  sip: {
    Busy: { 486: 85, 600: 15 },
    NoAnswer: { 480: 50, 408: 35, 487: 15 },
    CallError: { 404: 40, 484: 20, 503: 40 },
  },
  ringSeconds: { Answer: 12, NoAnswer: 30, Busy: 4, CallError: 1 },
  machineSeconds: 20,
  hangUpShare: 0.15,
  executionErrorShare: 0.01,
};
