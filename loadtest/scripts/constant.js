// constant.js: a constant arrival rate of tasks with the mixed-delay
// workload (past due, below the smallest tier, between tiers, exact tier,
// multi-hop) and a paid fraction.
//
//   RATE (200/s), DURATION (20s), BROKERS, TIERS (1s,2s,5s,10s), MAX_DELAY
//   (10s), PAID (0.2; needs STORE_URL), MIX, MANIFEST, VUS, MAX_VUS; see lib.js.
import { env, num, scheduleOne, finish, thresholds, summaryTrendStats } from './lib.js';

const rate = num('RATE', 200);

export const options = {
  scenarios: {
    constant: {
      executor: 'constant-arrival-rate',
      rate,
      timeUnit: '1s',
      duration: env('DURATION', '20s'),
      preAllocatedVUs: num('VUS', Math.max(10, Math.ceil(rate / 100))),
      maxVUs: num('MAX_VUS', Math.max(50, Math.ceil(rate / 20))),
    },
  },
  thresholds,
  summaryTrendStats,
};

export default function () {
  scheduleOne();
}

export function teardown() {
  finish();
}
