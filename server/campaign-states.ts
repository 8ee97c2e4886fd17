// The campaign transition table (§3.1, completed where the spec is silent; README "Campaign states").
import type { CampaignState, SettableState } from '../api/enums.ts';

/** Which states may move to which by PUT .../state. Repeating the current state is a no-op (see isNoOp). */
export const TRANSITIONS: Record<CampaignState, readonly SettableState[]> = {
  Draft: ['Active', 'Canceled'],
  Active: ['Paused', 'Canceled'],
  Paused: ['Active', 'Canceled'],
  Finished: [],
  Canceled: [],
};

/** Asking for the state a campaign is already in answers 200 and changes nothing (safe retries). */
export function isNoOp(from: CampaignState, to: SettableState): boolean {
  return from === to;
}

export function canMove(from: CampaignState, to: SettableState): boolean {
  return TRANSITIONS[from].includes(to);
}
