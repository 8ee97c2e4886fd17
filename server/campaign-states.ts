// The campaign transition table (§3.1, completed where the spec is silent; docs/api.md "Campaign state transitions").
import type { CampaignState, SettableState } from '../api/enums.ts';
import { formatUtc } from '../api/timestamps.ts';
import type { Events } from './events.ts';
import type { CampaignRow } from './store/campaigns.ts';
import type { Store } from './store/store.ts';

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

/** Moves a campaign to a state (stamping endedAt when it ends) and emits campaign.state_changed. */
export function setCampaignState(store: Store, events: Events, c: CampaignRow, to: CampaignState, now: number): void {
  const ends = to === 'Canceled' || to === 'Finished';
  store.campaigns.setState(c.pk, to, ends ? { endedAt: formatUtc(now) } : {});
  events.emit(c, 'campaign.state_changed', { from: c.state, to });
}
