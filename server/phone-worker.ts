// Worker thread body: validates for PhoneValidator the phone numbers only libphonenumber-js can answer (rejections, mostly).
import { parentPort } from 'node:worker_threads';
import { checkPhoneNumber } from './phone-numbers.ts';

parentPort!.on('message', (msg: { id: number; raws: string[] }) => {
  parentPort!.postMessage({ id: msg.id, checks: msg.raws.map(checkPhoneNumber) });
});
