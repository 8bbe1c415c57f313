// soak.js: a long constant rate, to see that lateness, memory and lag stay
// flat over time.
//
//   RATE (500/s), DURATION (30m), MAX_DELAY (10s), PAID (0.2); see lib.js.
import { constantOptions, scheduleOne, finish } from './lib.js';

export const options = constantOptions('soak', 500, '30m');

export default function () {
  scheduleOne();
}

export function teardown() {
  finish();
}
