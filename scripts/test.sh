#!/usr/bin/env bash
# The test command: installs what is missing, runs the linters on every
# module (scripts/lint.sh; golangci-lint's govet stands for go vet), then
# runs every test.
#   scripts/test.sh            all tests, with the race detector
#   scripts/test.sh ./pkg/...  only these packages (the linters still run on all)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
export PATH="$PWD/.tools/bin:$PATH" # promtool, when deps.sh fetched it

pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)

scripts/lint.sh
echo "== go test -race"
go test -race -shuffle=on -count=1 -timeout 20m "${pkgs[@]}"
