// Shared by the load test scripts: parameters from the environment (k6 -e
// NAME=value or the process environment), the producer, the delay mix and
// the end-of-run report.
import hourglass from 'k6/x/hourglass';

export function env(name, def) {
  const v = __ENV[name];
  return v === undefined || v === '' ? def : v;
}

export function num(name, def) {
  const raw = env(name, undefined);
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${name}=${raw}: not a number`);
  return n;
}

function bool(name, def) {
  const v = env(name, undefined);
  if (v === undefined) return Boolean(def);
  return ['1', 't', 'true', 'yes'].includes(String(v).toLowerCase());
}

// ms reads a duration (500ms, 1s, 1m30s, 1h, or a bare number of
// milliseconds) as milliseconds.
export function ms(name, def) {
  const raw = String(env(name, def));
  if (/^\d+(\.\d+)?$/.test(raw)) return Number(raw);
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(raw)) throw new Error(`${name}=${raw}: want a duration such as 500ms, 1s or 1m30s`);
  const unit = { ms: 1, s: 1000, m: 60000, h: 3600000 };
  let total = 0;
  for (const m of raw.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(m[1]) * unit[m[2]];
  return total;
}

// Connection: the same HOURGLASS_* variables as the router and canceller.
const brokers = env('BROKERS', env('HOURGLASS_BROKERS', '127.0.0.1:9092'));

function tls() {
  const t = {
    enabled: bool('HOURGLASS_TLS'),
    caFile: env('HOURGLASS_TLS_CA_FILE', ''),
    certFile: env('HOURGLASS_TLS_CERT_FILE', ''),
    keyFile: env('HOURGLASS_TLS_KEY_FILE', ''),
    serverName: env('HOURGLASS_TLS_SERVER_NAME', ''),
    insecureSkipVerify: bool('HOURGLASS_TLS_INSECURE_SKIP_VERIFY'),
  };
  return Object.values(t).some((v) => v) ? t : null;
}

function sasl() {
  const mechanism = env('HOURGLASS_SASL_MECHANISM', '');
  if (!mechanism) return null;
  return {
    mechanism,
    user: env('HOURGLASS_SASL_USER', ''),
    password: env('HOURGLASS_SASL_PASSWORD', ''),
    passwordFile: env('HOURGLASS_SASL_PASSWORD_FILE', ''),
  };
}

// params are the workload parameters every script shares.
export const params = {
  tiers: env('TIERS', env('HOURGLASS_TIERS', '1s,2s,5s,10s')),
  prefix: env('PREFIX', env('HOURGLASS_TOPIC_PREFIX', 'hourglass.')),
  maxDelay: env('MAX_DELAY', '10s'),
  pastDue: env('PAST_DUE', '2s'),
  paid: num('PAID', 0.2),
  weights: env('MIX', ''),
  kind: env('KIND', 'order-timeout'),
  storeUrl: env('STORE_URL', ''),
  // outcomes: read the outcomes topic during the run and judge every task
  // (lateness, early, wrong outcome, lost) in k6 metrics and thresholds.
  outcomes: bool('OUTCOMES', true),
  // wait: how long past the last due time teardown() waits for outcomes
  // before it counts the tasks without one as lost.
  wait: env('WAIT', '30s'),
};

if (params.paid > 0 && !params.storeUrl) {
  throw new Error(`PAID=${params.paid} needs STORE_URL, the order store of "hourglass demo --serve --store-addr"; ` +
    'against a cluster whose store the test cannot reach, set PAID=0');
}

export const producer = new hourglass.Producer({
  brokers,
  prefix: params.prefix,
  tiers: params.tiers,
  kind: params.kind,
  storeUrl: params.storeUrl,
  manifest: env('MANIFEST', ''),
  runId: env('RUN_ID', ''),
  maxInFlight: num('MAX_IN_FLIGHT', 10000),
  outcomes: params.outcomes,
  outcomesTopic: env('OUTCOMES_TOPIC', env('HOURGLASS_OUTCOMES_TOPIC', '')),
  outcomeWait: params.wait,
  linger: env('LINGER', null),
  tls: tls(),
  sasl: sasl(),
});

const seed = num('SEED', 0);
export const mix = new hourglass.Mix({
  tiers: params.tiers,
  maxDelay: params.maxDelay,
  pastDue: params.pastDue,
  paidFraction: params.paid,
  weights: params.weights,
  seed: seed ? seed + __VU : 0, // one stream per VU
});

// scheduleOne draws one task from the mix and schedules it.
export function scheduleOne() {
  const t = mix.next();
  producer.schedule({ delayMs: t.delayMs, paid: t.paid, shape: t.shape });
}

// finish closes the producer (waiting for the tasks in flight, completing
// the manifest, then waiting up to WAIT past the last due time for the
// outcomes) and prints its totals; call it from teardown().
export function finish() {
  const s = producer.close();
  let line = `hourglass run ${s.runId}: ${s.produced} produced, ${s.errors} produce errors, ` +
    `${s.payErrors} pay errors; manifest ${s.manifest}`;
  const o = s.outcomes;
  if (o) {
    line += `; outcomes: ${o.final} final, ${o.lost} lost, ${o.early} early, ${o.wrongOutcome} wrong, ` +
      `lateness max ${o.maxLatenessMs} ms` + (o.error ? `; outcomes error: ${o.error}` : '');
  }
  console.log(line + (s.firstError ? `; first error: ${s.firstError}` : ''));
  return s;
}

// bounds are the thresholds' limits, in milliseconds (0: no bound):
// MAX_P99 and MAX_LATENESS on the close lateness (as verify's --max-p99 and
// --max-lateness), MAX_PRODUCE_P99 on the produce latency.
export const bounds = {
  lateP99: ms('MAX_P99', '1s'),
  lateMax: ms('MAX_LATENESS', '5s'),
  produceP99: ms('MAX_PRODUCE_P99', '1s'),
};

// thresholds fail the run on any produce or payment error, a slow produce,
// and, with OUTCOMES (the default), on any task lost, closed early or given
// the wrong outcome, and on a close lateness above the bounds.
export const thresholds = {
  hourglass_produce_errors: ['rate==0'],
  hourglass_pay_errors: ['rate==0'],
};
if (bounds.produceP99 > 0) thresholds.hourglass_produce_latency = [`p(99)<${bounds.produceP99}`];
if (params.outcomes) {
  const late = [];
  if (bounds.lateP99 > 0) late.push(`p(99)<${bounds.lateP99}`);
  if (bounds.lateMax > 0) late.push(`max<${bounds.lateMax}`);
  if (late.length) thresholds.hourglass_close_lateness = late;
  thresholds.hourglass_early = ['count==0'];
  thresholds.hourglass_lost = ['count==0'];
  thresholds.hourglass_wrong_outcome = ['count==0'];
}

// teardownTimeout covers finish(): the longest delay and WAIT for the
// outcomes, and two minutes for the produces in flight.
export const teardownTimeout = `${Math.ceil((ms('MAX_DELAY', '10s') + ms('WAIT', '30s')) / 1000) + 120}s`;

export const summaryTrendStats = ['avg', 'p(50)', 'p(90)', 'p(99)', 'max'];

// constantOptions are the k6 options of a constant arrival rate of RATE
// tasks per second for DURATION, with rate and duration defaulting to the
// script's own; scenario names the scenario in k6's output.
export function constantOptions(scenario, defRate, defDuration) {
  const rate = num('RATE', defRate);
  return {
    scenarios: {
      [scenario]: {
        executor: 'constant-arrival-rate',
        rate,
        timeUnit: '1s',
        duration: env('DURATION', defDuration),
        preAllocatedVUs: num('VUS', Math.max(10, Math.ceil(rate / 100))),
        maxVUs: num('MAX_VUS', Math.max(50, Math.ceil(rate / 20))),
      },
    },
    thresholds,
    summaryTrendStats,
    teardownTimeout,
  };
}
