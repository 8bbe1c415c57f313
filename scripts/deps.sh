#!/usr/bin/env bash
# Installs and starts what the tests need on a fresh Debian machine, and
# leaves alone what is already there. It is idempotent; the test command runs
# it first. The tests need Go, and promtool for the alerting rules; Kafka is
# kfake, in the test process.
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
# (go test ./deploy/...). Debian's prometheus package ships /usr/bin/promtool.
if ! command -v promtool >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: promtool is required (deploy/prometheus tests); install Prometheus' promtool, there is no apt-get here" >&2
    exit 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: promtool is required (deploy/prometheus tests); run as root, or: sudo apt-get install prometheus" >&2
    exit 1
  fi
  echo "deps: promtool missing; installing Debian's prometheus package (apt-get update, then install)"
  if ! apt-get update -qq; then
    echo "deps: apt-get update failed; cannot install promtool" >&2
    exit 1
  fi
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null \
      || ! command -v promtool >/dev/null 2>&1; then
    echo "deps: could not install promtool with apt-get install prometheus" >&2
    exit 1
  fi
fi
have_promtool=$(promtool --version 2>&1 | sed -n 's/^promtool, version \([^ ]*\).*/\1/p')

go mod download
echo "deps: ready (go ${have_go}, promtool ${have_promtool:-unknown})"
