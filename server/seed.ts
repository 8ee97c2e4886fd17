// `--seed demo`: an account with a campaign of each type and state, some numbers, and a Campaign Admin key.
import type { CampaignState, CampaignType } from '../api/enums.ts';
import { DEFAULT_SETTINGS } from './dialer/model.ts';
import { admit } from './numbers-intake.ts';
import type { Account } from './store/accounts.ts';
import type { Store } from './store/store.ts';

export const DEMO_ACCOUNT_NAME = 'Demo Company';

/** Demo campaigns dial around the clock, so that whoever starts the server sees calls at once. */
const DEMO_SETTINGS = {
  ...DEFAULT_SETTINGS,
  callingHours: { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] },
} satisfies typeof DEFAULT_SETTINGS;

export function seedDemo(store: Store, now: Date): { account: Account; adminToken: string } {
  const existing = store.db.get<{ id: string }>('SELECT id FROM accounts WHERE name = ? ORDER BY pk LIMIT 1', DEMO_ACCOUNT_NAME);
  let account = existing && store.accounts.byId(existing.id);
  if (!account) {
    account = store.accounts.create(DEMO_ACCOUNT_NAME, 'America/New_York', now);
    let n = 0;
    for (const type of ['Static', 'Dynamic'] as CampaignType[]) {
      for (const state of ['Draft', 'Active', 'Paused', 'Canceled', 'Finished'] as CampaignState[]) {
        const row = store.campaigns.create(account.pk, {
          name: `${type} ${state}`, state, type, phoneSystemId: 'ps-1', extensionId: `ext-${100 + n}`,
          dialerMode: n % 2 ? 'Predictive' : 'Power', dialerSettings: DEMO_SETTINGS, tagIds: [n % 3 ? 'sales' : 'support'], startDate: null, endDate: null,
          startedAt: null, endedAt: null, callflowIds: ['cf-main'], humanAnswerCallflowId: 'cf-human',
          answeringMachineCallflowId: 'cf-machine', webhookEndpointId: null, isArchived: false,
        }, now);
        const numbers = Array.from({ length: 25 }, (_, i) => ({
          position: i, raw: `+1212555${String(n * 100 + i).padStart(4, '0')}`, varValues: [`Customer ${n * 100 + i}`],
        }));
        admit(store, row.pk, ['name'], numbers);
        n++;
      }
    }
  }
  const { token } = store.accounts.createKey(account, { name: 'demo admin', roles: ['CampaignAdmin'], campaignIds: null, expiresAt: null }, now);
  return { account, adminToken: token };
}
