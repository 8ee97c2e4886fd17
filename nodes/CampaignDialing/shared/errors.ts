// The node's own errors, with their message kept as written.
import type { INode, NodeApiError } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

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
