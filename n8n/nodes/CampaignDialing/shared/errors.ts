// The node's own errors, with their message kept as written, and the API's spellings said in words.
import type { INode, NodeApiError } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { END_TYPES, NUMBER_DETAIL_STATUSES, OUTCOMES, RING_RESULTS, ROLES, type Operation } from '../../../api/enums.ts';

type Options = ConstructorParameters<typeof NodeOperationError>[2];

/**
 * n8n's error classes replace a message that contains a system error code anywhere (ECONNREFUSED, EEXIST, EPERM, ...)
 * with a generic text of their own, even inside a campaign name or a phone number; set after construction, the
 * message stays ours.
 */
export function keepMessage<E extends NodeOperationError | NodeApiError>(error: E, message: string): E {
  error.message = message;
  return error;
}

/** A NodeOperationError whose message is exactly `message`. */
export function operationError(node: INode, message: string, options?: Options): NodeOperationError {
  return keepMessage(new NodeOperationError(node, message, options), message);
}

/** An API spelling in words: "RetryPending" as "Retry Pending", "CampaignNumberProvider" as "Campaign Number Provider". */
export const inWords = (value: string): string =>
  value.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/\bCallflow\b/g, 'Call Flow');

/** What each operation name of the API (a role's grant, as the server names it in a 403) lets a key do. */
const OPERATION_WORDS: Record<Operation, string> = {
  'campaigns.list': 'listing campaigns',
  'campaigns.duplicate': 'duplicating campaigns',
  'campaigns.changeState': 'changing the state of campaigns',
  'campaigns.delete': 'deleting campaigns',
  'campaigns.deleteMany': 'deleting many campaigns at once',
  'numbers.list': 'listing the numbers of a campaign',
  'numbers.add': 'adding numbers',
  'numbers.upload': 'uploading CSV files of numbers',
  'numbers.delete': 'deleting numbers',
  'reports.callDetails': 'reading the call details report',
  'reports.numberDetails': 'reading the number details report',
};

/** The API's enum values that are more than one word: the spellings a message shows in words. */
const SPELLINGS = new RegExp(`\\b(${[...new Set([
  ...NUMBER_DETAIL_STATUSES, ...OUTCOMES, ...END_TYPES, ...RING_RESULTS, ...ROLES,
])].filter((v) => /[a-z][A-Z]/.test(v)).join('|')})\\b`, 'g');

/** A message of the API with its spellings (enum values, operation names) said in words, for a user or a model. */
export function apiTextInWords(text: string): string {
  return text
    .replace(/\b(campaigns|numbers|reports)\.[a-zA-Z]+\b/g, (name) => OPERATION_WORDS[name as Operation] ?? name)
    .replace(SPELLINGS, (value) => inWords(value));
}

/**
 * An item's index in a message, as the node words it for a workflow ("The phone number … of item 3 was rejected",
 * "… is empty for item 0", "The IDs at fault come from item 1; nothing was deleted, for any item."). An AI agent's
 * tool call is one input item, so to a model the index means nothing.
 */
const ITEM_REFERENCES: Array<[RegExp, string]> = [
  [/The IDs at fault come from items? [\d, and]+; nothing was deleted, for any item\./g, 'Nothing was deleted.'],
  [/ (?:of|for) item \d+\b/g, ''],
];

const withoutItems = (text: string): string => ITEM_REFERENCES.reduce((t, [pattern, by]) => t.replace(pattern, by), text);

/**
 * A failure as an AI agent's model must read it: the message and the description (what was wrong, what to call
 * instead) in one text, without item indexes.
 */
export function forTheModel(error: unknown): string {
  const { message, description } = error as { message?: unknown; description?: unknown };
  const said = withoutItems(String(message ?? error));
  const hint = typeof description === 'string' && description.trim() ? withoutItems(description.trim()) : '';
  return hint && !said.includes(hint) ? `${said}${/[.!?:]$/.test(said) ? '' : '.'}\n${hint}` : said;
}
