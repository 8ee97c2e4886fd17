// Worker thread body: validates batches of phone numbers for PhoneValidator.
import { parentPort } from 'node:worker_threads';
import { checkPhoneNumber } from './phone-numbers.ts';

parentPort!.on('message', (msg: { id: number; raws: string[] }) => {
  parentPort!.postMessage({ id: msg.id, checks: msg.raws.map(checkPhoneNumber) });
});
