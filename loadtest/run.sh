#!/usr/bin/env bash
# run.sh: build k6 with the k6/x/hourglass extension and the verify command
# into ../bin, run a k6 scenario against a local pipeline (hourglass demo
# --serve with its order store) or, with BROKERS set, against a cluster.
# k6 itself judges the run: the extension reads the outcomes topic during
# the run, teardown() waits up to WAIT past the last due time, and the
# scenario's thresholds fail k6 (exit 99) on a task lost, closed early or
# given the wrong outcome, on a close lateness above MAX_P99 or
# MAX_LATENESS, or on a produce error. verify then reads the manifest and
# the outcomes topic again, as a second opinion that also counts duplicates
# and unexpected events. Exits with k6's status when k6 failed (99: a
# threshold), else with verify's (1: lost, early or wrong outcomes, or over
# a bound; 2: could not verify).
#
# Parameters (environment):
#   SCRIPT     scripts/<SCRIPT> to run                 (constant.js; ramp.js
#              reads START_RATE, MAX_RATE, STEPS, STEP_DURATION instead of
#              RATE and DURATION)
#   RATE       tasks per second                        (200)
#   DURATION   how long to schedule: Ns, Nm or Nh      (20s)
#   MAX_DELAY  longest delay drawn                     (10s)
#   TIERS      delay tiers, as the router's            (1s,2s,5s,10s)
#   PAID       fraction of orders paid (needs a store) (0.2 local, 0 with BROKERS)
#   WAIT       how long past the last due time k6 (and verify) wait for
#              outcomes                                (30s)
#   MAX_P99    the k6 threshold hourglass_close_lateness p(99), and verify's
#              bound                                   (1s; 0: no bound)
#   MAX_LATENESS  the threshold hourglass_close_lateness max, and verify's
#              bound                                   (5s; 0: none)
#   MAX_PRODUCE_P99  the threshold hourglass_produce_latency p(99) (1s; 0: none)
#   OUT        directory for the manifest and logs     (a new temporary one)
#   BROKERS    a cluster's brokers: no local pipeline is started; the
#              router and canceller must run there with the same TIERS.
#              TLS and SASL come from HOURGLASS_TLS, HOURGLASS_TLS_CA_FILE,
#              HOURGLASS_TLS_CERT_FILE, HOURGLASS_TLS_KEY_FILE,
#              HOURGLASS_TLS_SERVER_NAME, HOURGLASS_SASL_MECHANISM,
#              HOURGLASS_SASL_USER, HOURGLASS_SASL_PASSWORD(_FILE), as for
#              the services.
#   STORE_URL  with BROKERS: an order store speaking the demo's API, to pay
#              the PAID fraction
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$root/bin
GO=${GO:-go}

SCRIPT=${SCRIPT:-constant.js}
RATE=${RATE:-200}
DURATION=${DURATION:-20s}
MAX_DELAY=${MAX_DELAY:-10s}
TIERS=${TIERS:-1s,2s,5s,10s}
WAIT=${WAIT:-30s}
MAX_P99=${MAX_P99:-1s}
MAX_LATENESS=${MAX_LATENESS:-5s}
MAX_PRODUCE_P99=${MAX_PRODUCE_P99:-1s}
PARTITIONS=${PARTITIONS:-6}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/hourglass-loadtest.XXXXXX")}
mkdir -p "$out"

# k6 must never reach the internet: no usage report, no automatic extension
# resolution (K6_BINARY_PROVISIONING is its older name).
export K6_NO_USAGE_REPORT=true K6_AUTO_EXTENSION_RESOLUTION=false K6_BINARY_PROVISIONING=false

seconds() { # 20s, 5m, 1h -> seconds
  case $1 in
    *h) echo $(( ${1%h} * 3600 )) ;;
    *m) echo $(( ${1%m} * 60 )) ;;
    *s) echo "${1%s}" ;;
    *) echo "run.sh: $2=$1: want Ns, Nm or Nh" >&2; exit 2 ;;
  esac
}
case $SCRIPT in
  ramp.js) run_s=$(( ${STEPS:-5} * (5 + $(seconds "${STEP_DURATION:-20s}" STEP_DURATION)) )) ;;
  *) run_s=$(seconds "$DURATION" DURATION) ;;
esac

echo "run.sh: building k6 and verify into $bin"
(cd "$here" && "$GO" build -o "$bin/k6" ./cmd/k6 && "$GO" build -o "$bin/verify" ./cmd/verify)

demo_pid=
stop_demo() {
  [[ -n $demo_pid ]] || return 0
  kill -TERM "$demo_pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$demo_pid" 2>/dev/null || { wait "$demo_pid" 2>/dev/null || true; demo_pid=; return 0; }
    sleep 0.2
  done
  kill -KILL "$demo_pid" 2>/dev/null || true
  wait "$demo_pid" 2>/dev/null || true
  demo_pid=
}
trap stop_demo EXIT

if [[ -z ${BROKERS:-} ]]; then
  PAID=${PAID:-0.2}
  (cd "$root" && "$GO" build -o "$bin/hourglass" ./cmd/hourglass)
  "$bin/hourglass" demo --serve --orders 0 --listen 127.0.0.1:0 --store-addr 127.0.0.1:0 \
    --tiers "$TIERS" --partitions "$PARTITIONS" >"$out/demo.log" 2>&1 &
  demo_pid=$!
  for _ in $(seq 1 300); do # 60 s
    grep -q 'keeps running' "$out/demo.log" && break
    kill -0 "$demo_pid" 2>/dev/null || { cat "$out/demo.log" >&2; echo "run.sh: the demo pipeline exited" >&2; exit 2; }
    sleep 0.2
  done
  grep -q 'keeps running' "$out/demo.log" || { cat "$out/demo.log" >&2; echo "run.sh: the demo pipeline did not start within 60s" >&2; exit 2; }
  BROKERS=$(sed -n 's/.*embedded Kafka broker on \([0-9.]*:[0-9]*\).*/\1/p' "$out/demo.log" | head -n 1)
  STORE_URL=http://$(sed -n 's|.*order store API on http://\([0-9.]*:[0-9]*\).*|\1|p' "$out/demo.log" | head -n 1)
  echo "run.sh: local pipeline (hourglass demo --serve, pid $demo_pid): broker $BROKERS, order store $STORE_URL, tiers $TIERS"
else
  PAID=${PAID:-0}
  echo "run.sh: cluster $BROKERS, tiers $TIERS (the router's must match)"
fi

manifest=$out/manifest.jsonl
echo "run.sh: k6 run scripts/$SCRIPT: $RATE/s for $DURATION, delays up to $MAX_DELAY, paid $PAID; output in $out"
set +e
# k6 runs for the scenario, then its teardown waits for the outcomes: up to
# MAX_DELAY and WAIT more.
k6_limit=$(( run_s + $(seconds "$MAX_DELAY" MAX_DELAY) + $(seconds "$WAIT" WAIT) + 180 ))
timeout --kill-after=10s "$k6_limit" "$bin/k6" run --quiet --no-color \
  -e BROKERS="$BROKERS" -e STORE_URL="${STORE_URL:-}" -e TIERS="$TIERS" -e RATE="$RATE" \
  -e DURATION="$DURATION" -e MAX_DELAY="$MAX_DELAY" -e PAID="$PAID" -e MANIFEST="$manifest" \
  -e WAIT="$WAIT" -e MAX_P99="$MAX_P99" -e MAX_LATENESS="$MAX_LATENESS" -e MAX_PRODUCE_P99="$MAX_PRODUCE_P99" \
  "$here/scripts/$SCRIPT" 2>&1 | tee "$out/k6.log"
k6_rc=${PIPESTATUS[0]}
set -e
if [[ ! -s $manifest ]]; then
  echo "run.sh: k6 exited $k6_rc and wrote no manifest" >&2
  exit 2
fi

echo "run.sh: verify (waiting up to $WAIT past the last due time)"
set +e
"$bin/verify" --brokers "$BROKERS" --manifest "$manifest" --wait "$WAIT" --timeout 10m \
  --max-p99 "$MAX_P99" --max-lateness "$MAX_LATENESS" >"$out/verify.json"
verify_rc=$?
set -e
echo "run.sh: verify report (JSON): $out/verify.json"
stop_demo

if (( k6_rc != 0 )); then
  echo "run.sh: k6 failed ($k6_rc, 99 is a failed threshold); verify exited $verify_rc; manifest, logs and report in $out" >&2
  exit "$k6_rc"
fi
if (( verify_rc != 0 )); then
  echo "run.sh: k6 passed but verify failed ($verify_rc); manifest, logs and report in $out" >&2
  exit "$verify_rc"
fi
echo "run.sh: OK; manifest, logs and report in $out"
