#!/usr/bin/env bash
# Installs the linter scripts/lint.sh runs, pinned, with nothing but Go and
# its module proxy:
#   .tools/bin/golangci-lint   github.com/golangci/golangci-lint/v2/cmd/golangci-lint
# It is idempotent: a binary there of the pinned version is left alone. It
# says what it did.
set -euo pipefail

GOLANGCI_LINT_VERSION=v2.15.0

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/.tools/bin"
mkdir -p "$bin"

if ! command -v go >/dev/null 2>&1; then
  echo "lint-tools: Go is required (https://go.dev/dl/); it is not on PATH" >&2
  exit 1
fi

# installed_version prints the module version a Go binary was built from.
installed_version() {
  [ -x "$1" ] || return 0
  go version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $3; exit }'
}

have=$(installed_version "$bin/golangci-lint")
if [ "$have" = "$GOLANGCI_LINT_VERSION" ]; then
  echo "lint-tools: golangci-lint $GOLANGCI_LINT_VERSION already in .tools/bin"
  exit 0
fi
echo "lint-tools: installing golangci-lint $GOLANGCI_LINT_VERSION${have:+ (replacing $have)} with go install; the first build takes a few minutes"
GOBIN="$bin" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
echo "lint-tools: installed $bin/golangci-lint"
