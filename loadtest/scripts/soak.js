// soak.js: a long constant rate, to see that lateness, memory and lag stay
// flat over time.
//
//   RATE (500/s), DURATION (30m), MAX_DELAY (10s), PAID (0.2); see lib.js.
import { env, num, scheduleOne, finish, thresholds, summaryTrendStats } from './lib.js';

const rate = num('RATE', 500);

export const options = {
  scenarios: {
    soak: {
      executor: 'constant-arrival-rate',
      rate,
      timeUnit: '1s',
      duration: env('DURATION', '30m'),
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
