#!/usr/bin/env bash
# Builds a release into dist/ (`make release VERSION=vX.Y.Z`):
#   dist/hourglass_<version>_<os>_<arch>.tar.gz  router, canceller, hourglass,
#                                                LICENSE, README.md, CHANGELOG.md, docs/
#   dist/hourglass-<version without v>.tgz       the Helm chart, appVersion <version>
#   dist/SHA256SUMS                              sha256sum -c SHA256SUMS
# and the container image $IMAGE:<version> with docker buildx when docker
# and an engine are there (it says so when it skips it).
#
# Environment (the Makefile passes them):
#   VERSION    vX.Y.Z or vX.Y.Z-pre (required); stamped into every binary as
#              github.com/hourglass/hourglass/internal/version.Version
#   PLATFORMS  os/arch list, spaces or commas (default linux/amd64 linux/arm64
#              darwin/amd64 darwin/arm64); the image is built for the linux ones
#   IMAGE      image name without tag (default ghcr.io/hourglass/hourglass,
#              the chart's default image.repository)
#   PUSH       1: push the image (docker buildx --push); otherwise a single
#              platform image is loaded into the local engine
#   GO, HELM   the go and helm commands (default: go; .tools/bin/helm, else
#              helm on PATH, else scripts/k8s-tools.sh installs it)
#
# After building, it checks what it built: the checksums, the host's binary
# (when its platform is among PLATFORMS) reporting VERSION, and the chart's
# version.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

GO=${GO:-go}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
IMAGE=${IMAGE:-ghcr.io/hourglass/hourglass}
PUSH=${PUSH:-}
dist=dist

say() { echo "release: $*"; }
fail() { echo "release: $*" >&2; exit 1; }

VERSION=${VERSION:-}
# Semantic versioning with a leading v: the chart's version is VERSION
# without it, and Helm wants semver.
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
[[ $VERSION =~ $semver ]] || fail "VERSION=\"$VERSION\": want vMAJOR.MINOR.PATCH[-pre], e.g. v1.2.3 (make release VERSION=v1.2.3)"
chart_version=${VERSION#v}
read -r -a platforms <<<"${PLATFORMS//,/ }"
[ ${#platforms[@]} -gt 0 ] || fail "PLATFORMS is empty"
for p in "${platforms[@]}"; do
  [[ $p =~ ^[a-z0-9]+/[a-z0-9]+$ ]] || fail "PLATFORMS: \"$p\": want os/arch, e.g. linux/amd64"
done

# The revision, stamped at link time too: go build records none in a git
# worktree or with -buildvcs=false (see internal/version).
revision="" rev_time="" modified=""
if git rev-parse --git-dir >/dev/null 2>&1; then
  revision=$(git rev-parse HEAD)
  rev_time=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)
  modified=false
  if [ -n "$(git status --porcelain)" ]; then
    modified=true
    say "warning: the working tree has uncommitted changes; the binaries say \"modified\""
  fi
  if [ "$(git tag --points-at HEAD --list "$VERSION")" != "$VERSION" ]; then
    say "note: $VERSION is not a tag on HEAD ($revision)"
  fi
fi
# deploy/release_test.go checks that each -X names a variable that exists.
ldflags="-s -w -X github.com/hourglass/hourglass/internal/version.Version=$VERSION"
ldflags+=" -X github.com/hourglass/hourglass/internal/version.Revision=$revision"
ldflags+=" -X github.com/hourglass/hourglass/internal/version.Time=$rev_time"
ldflags+=" -X github.com/hourglass/hourglass/internal/version.Modified=$modified"

rm -rf "$dist"
mkdir -p "$dist"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# Reproducible archives with GNU tar: sorted names, the commit's time, no
# owners; gzip -n leaves out its own timestamp.
tar_flags=()
if tar --version 2>/dev/null | grep -q 'GNU tar'; then
  tar_flags=(--sort=name --owner=0 --group=0 --numeric-owner)
  [ -n "$rev_time" ] && tar_flags+=(--mtime="$rev_time")
fi

for p in "${platforms[@]}"; do
  os=${p%/*} arch=${p#*/}
  name=hourglass_${VERSION}_${os}_${arch}
  say "building $name"
  mkdir -p "$stage/$name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags "$ldflags" \
    -o "$stage/$name/" ./cmd/router ./cmd/canceller ./cmd/hourglass
  cp -R LICENSE README.md CHANGELOG.md docs "$stage/$name/"
  tar "${tar_flags[@]}" -C "$stage" -cf - "$name" | gzip -n -9 >"$dist/$name.tar.gz"
done

# The chart, its version and appVersion from VERSION: its default image tag
# is the appVersion, so it runs $IMAGE:$VERSION.
helm=${HELM:-}
if [ -z "$helm" ]; then
  if [ -x .tools/bin/helm ]; then
    helm=.tools/bin/helm
  elif command -v helm >/dev/null 2>&1; then
    helm=helm
  else
    say "no helm; installing it with scripts/k8s-tools.sh"
    scripts/k8s-tools.sh
    helm=.tools/bin/helm
  fi
fi
"$helm" package deploy/helm/hourglass --version "$chart_version" --app-version "$VERSION" --destination "$dist" >/dev/null
say "packaged the chart: $dist/hourglass-$chart_version.tgz (appVersion $VERSION, image $IMAGE:$VERSION)"

if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum "$@"; }
else
  sha256() { shasum -a 256 "$@"; } # macOS
fi
(cd "$dist" && sha256 -- *.tar.gz *.tgz >SHA256SUMS)

# The image, from the Dockerfile, for the linux platforms.
linux=()
for p in "${platforms[@]}"; do [[ $p == linux/* ]] && linux+=("$p"); done
image_ref=$IMAGE:$VERSION
if [ ${#linux[@]} -eq 0 ]; then
  say "image skipped: no linux platform in PLATFORMS"
elif ! command -v docker >/dev/null 2>&1 || ! docker buildx version >/dev/null 2>&1; then
  say "image skipped: docker with buildx is not installed; on a machine with it: make release VERSION=$VERSION (PUSH=1 to push $image_ref)"
elif ! docker info >/dev/null 2>&1; then
  say "image skipped: docker is installed but no engine answers (docker info failed)"
else
  out=()
  if [ "$PUSH" = 1 ]; then
    out=(--push)
  elif [ ${#linux[@]} -eq 1 ]; then
    out=(--load)
  else
    say "building the image for ${#linux[@]} platforms without PUSH=1: it stays in the build cache (docker can load one platform only)"
  fi
  platform_list=$(IFS=,; echo "${linux[*]}")
  docker buildx build --platform "$platform_list" \
    --build-arg VERSION="$VERSION" --build-arg REVISION="$revision" \
    --build-arg REVISION_TIME="$rev_time" --build-arg MODIFIED="$modified" \
    --label org.opencontainers.image.version="$VERSION" \
    --label org.opencontainers.image.revision="$revision" \
    --label org.opencontainers.image.source=https://github.com/hourglass/hourglass \
    -t "$image_ref" "${out[@]}" .
  say "built the image $image_ref ($platform_list)"
fi

# Check what was built.
(cd "$dist" && sha256 -c --quiet SHA256SUMS) || fail "$dist/SHA256SUMS does not match"
host="$("$GO" env GOOS)/$("$GO" env GOARCH)"
for p in "${platforms[@]}"; do
  [ "$p" = "$host" ] || continue
  name=hourglass_${VERSION}_${p%/*}_${p#*/}
  for b in router canceller hourglass; do
    got=$("$stage/$name/$b" --version)
    [[ $got == "$b $VERSION "* ]] || fail "$name/$b --version: \"$got\", want \"$b $VERSION ...\""
  done
  say "checked: $name/hourglass --version: $got"
done
got=$("$helm" show chart "$dist/hourglass-$chart_version.tgz" | awk '$1 == "version:" { print $2 }')
[ "$got" = "$chart_version" ] || fail "the packaged chart's version is \"$got\", want $chart_version"

say "done: $root/$dist"
ls -l "$dist"
