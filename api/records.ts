// The records the API returns (§2), as this project's server shapes them.
import type {
  AnswerType, CampaignState, CampaignType, DialerMode, EndType, NumberDetailStatus, NumberStatus, Outcome, RingResult, Role,
} from './enums.ts';

export const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** How the simulated dialer runs a campaign (an extension: the spec shows only dialer.mode). */
export interface DialerSettings {
  agents: number;
  /** Power: lines dialed per available agent. Predictive starts here and adapts. */
  linesPerAgent: number;
  talkSeconds: number;
  wrapUpSeconds: number;
  maxAttempts: number;
  retryDelaySeconds: { NoAnswer: number; Busy: number; CallError: number; Machine: number; Abandoned: number };
  /** Predictive: abandoned calls as a share of answered human calls to stay under. */
  abandonRateTarget: number;
  /** Local time in the account's zone, `HH:MM`, on these days. */
  callingHours: { from: string; to: string; days: Weekday[] };
}

export interface Campaign {
  id: string;
  name: string;
  state: CampaignState;
  type: CampaignType;
  phoneSystemId: string | null;
  extensionId: string | null;
  dialer: { mode: DialerMode } & DialerSettings;
  tagIds: string[];
  /** UTC timestamps, `YYYY-MM-DDTHH:MM:SSZ`. */
  startDate: string | null;
  endDate: string | null;
  startedAt: string | null;
  endedAt: string | null;
  callflowIds: string[];
  callBehavior: { humanAnswerCallflowId: string | null; answeringMachineCallflowId: string | null };
  webhookEndpointId: string | null;
  isArchived: boolean;
  numbersCount: number;
  createdAt: string;
}

export interface CampaignNumber {
  id: string;
  number: string;
  status: NumberStatus;
  attempts: number;
  varNames: string[];
  varValues: string[];
}

export interface CallDetail {
  id: string;
  numberId: string;
  number: string;
  attempt: number;
  /** Local timestamps in the account's time zone, `YYYY-MM-DDTHH:MM:SS`. */
  startedAtLocal: string;
  answeredAtLocal: string | null;
  endedAtLocal: string;
  ringResult: RingResult;
  answerType: AnswerType | null;
  sipResponseCode: number;
  endType: EndType | null;
  queueId: string | null;
  outcome: Outcome;
}

export interface NumberDetail {
  id: string;
  number: string;
  status: NumberDetailStatus;
  attempts: number;
  varNames: string[];
  varValues: string[];
}

export interface ApiKey {
  id: string;
  name: string;
  roles: Role[];
  campaignIds: string[] | null;
  /** The first characters of the token, enough to recognise it; never the token. */
  tokenPrefix: string;
  createdAt: string;
  expiresAt: string | null;
  deletedAt: string | null;
}

/** Body of 201 from POST .../numbers. */
export interface AddNumbersResult {
  created: CampaignNumber[];
  /** `index` is the entry's 0-based position in the body; a duplicate within the body names the entry it repeats in `duplicateOf`. */
  rejected: { index: number; number: unknown; reason: string; code: RejectionCode; duplicateOf?: number }[];
}

/** Body of 201 from POST .../numbers/upload. */
export interface UploadResult {
  rows: number;
  createdCount: number;
  rejectedCount: number;
  /** The first rejected rows (at most UPLOAD_REJECTIONS_SHOWN), line numbers 1-based as in the file. */
  rejected: { line: number; value: string; reason: string; code: RejectionCode }[];
  varNames: string[];
  /** Whether the first row was read as a header (given, or detected: a first cell without digits). */
  firstRowIsHeader: boolean;
  varCount: number;
}

export type RejectionCode = 'invalid_number' | 'duplicate' | 'wrong_column_count';
