// The enumerations of spec §2–§5: campaign states, number statuses, report values and key roles.

export const CAMPAIGN_STATES = ['Draft', 'Active', 'Paused', 'Canceled', 'Finished'] as const;
export type CampaignState = (typeof CAMPAIGN_STATES)[number];

/** The only states a client may ask for with PUT .../state (§3.1). */
export const SETTABLE_STATES = ['Active', 'Paused', 'Canceled'] as const;
export type SettableState = (typeof SETTABLE_STATES)[number];

export const CAMPAIGN_TYPES = ['Static', 'Dynamic'] as const;
export type CampaignType = (typeof CAMPAIGN_TYPES)[number];

export const DIALER_MODES = ['Power', 'Predictive'] as const;
export type DialerMode = (typeof DIALER_MODES)[number];

export const NUMBER_STATUSES = ['NotContacted', 'Contacting', 'Blacklisted', 'Success', 'RetryPending', 'Failure'] as const;
export type NumberStatus = (typeof NUMBER_STATUSES)[number];

/** The number-details report also shows numbers that were deleted (§4.11). */
export const NUMBER_DETAIL_STATUSES = [...NUMBER_STATUSES, 'Deleted'] as const;
export type NumberDetailStatus = (typeof NUMBER_DETAIL_STATUSES)[number];

/** Statuses in which a number may still be deleted (§3.2, §4.9). */
export const DELETABLE_NUMBER_STATUSES: readonly NumberStatus[] = ['NotContacted', 'RetryPending'];

/** States in which a campaign may be deleted (§3.1, §4.5). */
export const DELETABLE_CAMPAIGN_STATES: readonly CampaignState[] = ['Draft', 'Finished', 'Canceled'];

export const RING_RESULTS = ['Answer', 'NoAnswer', 'Busy', 'CallError'] as const;
export type RingResult = (typeof RING_RESULTS)[number];

export const ANSWER_TYPES = ['Human', 'Machine', 'Unknown'] as const;
export type AnswerType = (typeof ANSWER_TYPES)[number];

export const END_TYPES = ['HangUp', 'CallflowComplete', 'ExecutionError'] as const;
export type EndType = (typeof END_TYPES)[number];

export const OUTCOMES = ['Success', 'FailureWithNoRetryLeft', 'FailureWithRetryPending'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** Role names as the console and key records spell them (§5, "Campaign Admin" etc.). */
export const ROLES = ['CampaignAdmin', 'CampaignReader', 'CampaignNumberAdmin', 'CampaignNumberProvider'] as const;
export type Role = (typeof ROLES)[number];

/** Roles that may be restricted to listed campaigns (§5.3). */
export const NUMBER_ROLES: readonly Role[] = ['CampaignNumberAdmin', 'CampaignNumberProvider'];

/** Every operation of §4, named for the role table. */
export const OPERATIONS = [
  'campaigns.list', 'campaigns.duplicate', 'campaigns.changeState', 'campaigns.delete', 'campaigns.deleteMany',
  'numbers.list', 'numbers.add', 'numbers.upload', 'numbers.delete',
  'reports.callDetails', 'reports.numberDetails',
] as const;
export type Operation = (typeof OPERATIONS)[number];

/** Which roles allow which operation (§5.6, made precise; see docs/api.md "Operations" and "Keys and roles"). */
export const ROLE_OPERATIONS: Record<Role, readonly Operation[]> = {
  CampaignAdmin: OPERATIONS,
  CampaignReader: ['campaigns.list', 'numbers.list', 'reports.callDetails', 'reports.numberDetails'],
  CampaignNumberAdmin: ['numbers.list', 'numbers.add', 'numbers.upload', 'numbers.delete'],
  CampaignNumberProvider: ['numbers.add', 'numbers.upload'],
};
