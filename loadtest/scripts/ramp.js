// ramp.js: a ramping arrival rate in STEPS steps from START_RATE to
// MAX_RATE, each ramped in 5 s and held STEP_DURATION, to find the knee:
// the step where hourglass_produce_latency climbs and dropped_iterations
// appear. Every sample carries the tag step (1..STEPS), and the summary
// shows the produce latency and count of each step.
//
//   START_RATE (1000/s), MAX_RATE (20000/s), STEPS (5), STEP_DURATION (20s),
//   MAX_DELAY (10s), PAID (0.2); see lib.js.
import exec from 'k6/execution';
import { env, num, scheduleOne, finish, thresholds, summaryTrendStats, teardownTimeout } from './lib.js';

const start = num('START_RATE', 1000);
const max = num('MAX_RATE', 20000);
const steps = num('STEPS', 5);
const hold = env('STEP_DURATION', '20s');
const rampSeconds = 5;
const holdSeconds = parseDuration(hold);

function parseDuration(s) {
  const m = /^(\d+)(s|m)$/.exec(s);
  if (!m) throw new Error(`STEP_DURATION=${s}: want e.g. 20s or 2m`);
  return Number(m[1]) * (m[2] === 'm' ? 60 : 1);
}

function rateOf(step) {
  return Math.round(steps === 1 ? max : start + ((max - start) * (step - 1)) / (steps - 1));
}

const stages = [];
for (let s = 1; s <= steps; s++) {
  stages.push({ target: rateOf(s), duration: `${rampSeconds}s` }, { target: rateOf(s), duration: hold });
}

// Always-passing thresholds on each step's sub-metrics make the summary show
// them.
const stepThresholds = {};
for (let s = 1; s <= steps; s++) {
  stepThresholds[`hourglass_produce_latency{step:${s}}`] = ['p(99)>=0'];
  stepThresholds[`hourglass_produced{step:${s}}`] = ['count>=0'];
}

export const options = {
  scenarios: {
    ramp: {
      executor: 'ramping-arrival-rate',
      startRate: rateOf(1),
      timeUnit: '1s',
      stages,
      preAllocatedVUs: num('VUS', 50),
      maxVUs: num('MAX_VUS', 500),
    },
  },
  thresholds: Object.assign({}, thresholds, stepThresholds),
  summaryTrendStats,
  teardownTimeout,
};

export default function () {
  const elapsed = (Date.now() - exec.scenario.startTime) / 1000;
  const step = Math.min(steps, 1 + Math.floor(elapsed / (rampSeconds + holdSeconds)));
  exec.vu.metrics.tags.step = String(step);
  scheduleOne();
}

export function teardown() {
  finish();
}
