// The reference server's storage: one SQLite database (file or :memory:) and a store per kind of record.
import { Accounts } from './accounts.ts';
import { Blacklist } from './blacklist.ts';
import { Webhooks } from './webhooks.ts';
import { CallDetails } from './call-details.ts';
import { Campaigns } from './campaigns.ts';
import { Database, type WalOptions } from './db.ts';
import { Numbers } from './numbers.ts';
import { PageReader } from './page-reader.ts';

export class Store {
  readonly db: Database;
  readonly accounts: Accounts;
  readonly campaigns: Campaigns;
  readonly numbers: Numbers;
  /** Pages of numbers lists and number-details reports (on a thread of their own for a file). */
  readonly pages: PageReader;
  readonly callDetails: CallDetails;
  readonly blacklist: Blacklist;
  readonly webhooks: Webhooks;

  constructor(path: string, wal: Partial<WalOptions> = {}) {
    this.db = new Database(path, wal);
    this.accounts = new Accounts(this.db);
    this.campaigns = new Campaigns(this.db);
    this.numbers = new Numbers(this.db);
    this.pages = new PageReader(this.db, path);
    this.callDetails = new CallDetails(this.db);
    this.blacklist = new Blacklist(this.db);
    this.webhooks = new Webhooks(this.db);
  }

  async close(): Promise<void> {
    await this.pages.close();
    await this.db.close();
  }
}
