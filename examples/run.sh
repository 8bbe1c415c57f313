#!/usr/bin/env bash
# Runs every producer of examples/ against `hourglass demo --serve` on a free
# loopback port: each schedules an order of its own due DELAY seconds ahead
# with the environment the demo's banner prints (HOURGLASS_BROKERS,
# HOURGLASS_TIERS, HOURGLASS_TOPIC_PREFIX), then the run waits for the
# demo's close line of each order, checks it closed no earlier than due and
# at most MAX_LATE_MS after, and that `hourglass status` finds it closed in
# the partition murmur2 gives its key. The Java example is compiled against
# examples/java/stub (the Kafka client's jar is not fetched), not run. It
# fails naming the example that failed. Needs bin/hourglass (built when
# missing), kcat, and a python3 with confluent_kafka and kafka
# (scripts/deps.sh installs Debian's packages).
#
# Environment: DELAY (3), MAX_LATE_MS (2000), WAIT_S (60): how long to wait
# for the demo to start and for the closes.
set -euo pipefail
cd "$(dirname "$0")/.."

delay=${DELAY:-3}
max_late=${MAX_LATE_MS:-2000}
wait_s=${WAIT_S:-60}
fail() { echo "examples: $*" >&2; exit 1; }

[ -x bin/hourglass ] || go build -o bin/hourglass ./cmd/hourglass
command -v kcat >/dev/null || fail "kcat is not on PATH (scripts/deps.sh installs it)"
py=
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import confluent_kafka, kafka' 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || fail "no python3 with confluent_kafka and kafka (scripts/deps.sh installs python3-confluent-kafka and python3-kafka)"

work=$(mktemp -d)
demo_pid=
stop_demo() {
  if [ -n "$demo_pid" ]; then
    kill -TERM "$demo_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$demo_pid" 2>/dev/null || true
    wait "$demo_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap stop_demo EXIT

log=$work/demo.log
bin/hourglass demo --serve --orders 0 --listen 127.0.0.1:0 >"$log" 2>&1 &
demo_pid=$!
for _ in $(seq 1 $((wait_s * 10))); do
  grep -q 'keeps running' "$log" && break
  kill -0 "$demo_pid" 2>/dev/null || { cat "$log" >&2; fail "hourglass demo --serve exited"; }
  sleep 0.1
done
grep -q 'keeps running' "$log" || { cat "$log" >&2; fail "hourglass demo --serve did not start within ${wait_s}s"; }

# The banner's export line, taken word by word rather than evaluated.
line=$(grep -m1 '^ *export HOURGLASS_BROKERS=' "$log") || { cat "$log" >&2; fail "the demo's banner has no export line"; }
for kv in ${line#*export }; do
  [[ $kv =~ ^HOURGLASS_[A-Z_]+=[A-Za-z0-9.:,_-]+$ ]] || fail "unexpected word in the banner's export line: $kv"
  export "${kv?}"
done
[[ ${HOURGLASS_BROKERS:-} =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "the banner's broker is not on loopback: ${HOURGLASS_BROKERS:-none}"
echo "examples: demo --serve (pid $demo_pid) on $HOURGLASS_BROKERS, tiers $HOURGLASS_TIERS, prefix $HOURGLASS_TOPIC_PREFIX"

# The Go example is built first, so that its compile time does not count.
go build -o "$work/go-example" ./examples/go
run=$(date +%s)-$$
declare -A cmds=(
  [go]="$work/go-example"
  [python-confluent]="$py examples/python/confluent.py"
  [python-kafka]="$py examples/python/kafka_python.py"
  [kcat]="examples/kcat/schedule.sh"
)
names=(go python-confluent python-kafka kcat)
for name in "${names[@]}"; do
  id=ex-$name-$run
  # shellcheck disable=SC2086 # the command is words
  timeout 30 ${cmds[$name]} "$id" "$delay" || fail "$name: scheduling $id failed (exit $?)"
  echo "examples: $name scheduled $id due in ${delay}s"
done

if command -v javac >/dev/null; then
  classes=$work/java
  javac -Xlint:all -Werror -d "$classes" -sourcepath examples/java/stub examples/java/Schedule.java ||
    fail "java: examples/java/Schedule.java does not compile"
  echo "examples: java: Schedule.java compiles against examples/java/stub (not run: the Kafka client's jar is not fetched)"
else
  echo "examples: java: skipped, no javac on PATH"
fi

for name in "${names[@]}"; do
  id=ex-$name-$run
  found=
  for _ in $(seq 1 $((wait_s * 10))); do
    found=$(grep -m1 "^closed $id: " "$log" || true)
    [ -n "$found" ] && break
    sleep 0.1
  done
  [ -n "$found" ] || { cat "$log" >&2; fail "$name: no close of $id within ${wait_s}s"; }
  late=$(sed -n 's/.*[:,] \(-\{0,1\}[0-9]*\) ms after its due time.*/\1/p' <<<"$found")
  [[ $late =~ ^-?[0-9]+$ ]] || fail "$name: cannot read the lateness of: $found"
  ((late >= 0 && late <= max_late)) || fail "$name: $id closed $late ms after its due time, want 0 to $max_late: $found"
  st=$(bin/hourglass status "$id" --since 10m --timeout 20s --format json) || fail "$name: hourglass status $id failed"
  grep -q '"state": "closed"' <<<"$st" || { echo "$st" >&2; fail "$name: hourglass status $id does not find it closed in its key's partition"; }
  echo "examples: $name: $found; status finds it closed"
done
echo "examples: ok"
