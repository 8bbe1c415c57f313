// constant.js: a constant arrival rate of tasks with the mixed-delay
// workload (past due, below the smallest tier, between tiers, exact tier,
// multi-hop) and a paid fraction.
//
//   RATE (200/s), DURATION (20s), BROKERS, TIERS (1s,2s,5s,10s), MAX_DELAY
//   (10s), PAID (0.2; needs STORE_URL), MIX, MANIFEST, VUS, MAX_VUS; see lib.js.
import { constantOptions, scheduleOne, finish } from './lib.js';

export const options = constantOptions('constant', 200, '20s');

export default function () {
  scheduleOne();
}

export function teardown() {
  finish();
}
