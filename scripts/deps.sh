#!/usr/bin/env bash
# Installs and starts what the tests need on a fresh Debian machine, and
# leaves alone what is already there. It is idempotent; the test command runs
# it first. Today the tests need only Go: Kafka is kfake, in the test process.
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

go mod download
echo "deps: ready (go ${have_go})"
