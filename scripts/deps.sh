#!/usr/bin/env bash
# Installs and starts what the tests need on a fresh Debian machine, and
# leaves alone what is already there. It is idempotent; the test command runs
# it first. The tests need Go, promtool for the alerting rules, PostgreSQL and
# MariaDB (the sql closer's order stores) and ClickHouse (the recorder and
# reports) on loopback, helm, kubeconform and Kubernetes schemas for the
# chart (pinned, built with go install), and Chromium, which renders the HTML
# report to a PNG, and kcat and Debian's Python Kafka clients for the
# producer examples; Kafka is kfake, in the test process.
set -euo pipefail

need_go="1.26"
if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go ${need_go} or newer is required (https://go.dev/dl/); it is not on PATH" >&2
  exit 1
fi
have_go=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$need_go" "$have_go" | sort -V | head -n1)" != "$need_go" ]; then
  echo "deps: Go ${need_go} or newer is required; found ${have_go}" >&2
  exit 1
fi

# promtool checks and unit-tests the alerting rules in deploy/prometheus
# (go test ./deploy/...). It is taken out of Debian's prometheus package into
# .tools/bin rather than installing the package, which would also install and
# start a Prometheus server.
tools="$(cd "$(dirname "$0")/.." && pwd)/.tools/bin"
export PATH="$tools:$PATH"
if ! command -v promtool >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: promtool is required (deploy/prometheus tests); put Prometheus' promtool on PATH, there is no apt-get here" >&2
    exit 1
  fi
  echo "deps: promtool missing; extracting it from Debian's prometheus package into .tools/bin"
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq || { echo "deps: apt-get update failed; cannot fetch promtool" >&2; exit 1; }
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  chmod 0755 "$work" # apt's download user must be able to write there
  if ! (cd "$work" && apt-get download -qq -o APT::Sandbox::User=root prometheus >/dev/null && dpkg-deb -x prometheus_*.deb root) \
      || [ ! -x "$work/root/usr/bin/promtool" ]; then
    echo "deps: could not fetch promtool with apt-get download prometheus (as root, apt-get update runs first)" >&2
    exit 1
  fi
  mkdir -p "$tools"
  install -m 0755 "$work/root/usr/bin/promtool" "$tools/promtool"
fi
have_promtool=$(promtool --version 2>&1 | sed -n 's/^promtool, version \([^ ]*\).*/\1/p')

# chromium renders the HTML report in a real browser to a PNG
# (internal/report TestHTMLScreenshot, make report-png); Debian's package,
# with the fonts it recommends so that the text is drawn.
if ! command -v chromium >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: chromium is required (internal/report screenshot test); put it on PATH, there is no apt-get here" >&2
    exit 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: chromium missing; run scripts/deps.sh as root (it runs apt-get install chromium)" >&2
    exit 1
  fi
  echo "deps: chromium missing; installing Debian's chromium package"
  apt-get update -qq || { echo "deps: apt-get update failed; cannot install chromium" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
    || { echo "deps: apt-get install chromium failed" >&2; exit 1; }
fi

# The producer examples (examples/run.sh, make examples, CI) run kcat and
# Python with confluent-kafka and kafka-python: Debian's packages, for
# Debian's python3.
if ! command -v kcat >/dev/null 2>&1 || ! /usr/bin/python3 -c 'import confluent_kafka, kafka' >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: kcat and python3 with confluent_kafka and kafka are required (examples/run.sh); install them, there is no apt-get here" >&2
    exit 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: kcat, python3-confluent-kafka or python3-kafka missing; run scripts/deps.sh as root (it runs apt-get install)" >&2
    exit 1
  fi
  echo "deps: installing Debian's kcat, python3-confluent-kafka and python3-kafka"
  apt-get update -qq || { echo "deps: apt-get update failed; cannot install kcat and the Python Kafka clients" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat python3-confluent-kafka python3-kafka >/dev/null \
    || { echo "deps: apt-get install kcat python3-confluent-kafka python3-kafka failed" >&2; exit 1; }
fi

scripts_dir="$(cd "$(dirname "$0")" && pwd)"
"$scripts_dir/databases.sh"
"$scripts_dir/clickhouse.sh"
"$scripts_dir/k8s-tools.sh"

go mod download
echo "deps: ready (go ${have_go}, promtool ${have_promtool:-unknown})"
