#!/usr/bin/env bash
# The linters: gofmt, then golangci-lint (pinned; scripts/lint-tools.sh
# installs it into .tools/bin) with .golangci.yml on every Go module of the
# repository. The test command runs it.
#   scripts/lint.sh         every module
#   scripts/lint.sh --fix   also apply the fixes golangci-lint knows, and format
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/lint-tools.sh >/dev/null
lint="$PWD/.tools/bin/golangci-lint"
fix=()
[ "${1:-}" = "--fix" ] && fix=(--fix)

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ] && [ ${#fix[@]} -eq 0 ]; then
  echo "not gofmt-ed:"; echo "$unformatted"; exit 1
fi

# Every directory with a go.mod of its own and Go files in it.
status=0
for mod in $(git ls-files 'go.mod' '*/go.mod' | xargs -n1 dirname | sort); do
  [ -n "$(cd "$mod" && git ls-files '*.go')" ] || continue
  echo "== golangci-lint ($mod)"
  (cd "$mod" && "$lint" run "${fix[@]}" ./...) || status=1
done
exit $status
