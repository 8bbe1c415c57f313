# syntax=docker/dockerfile:1
# The Hourglass image: one static binary, /hourglass, that runs every
# component (`hourglass router`, `canceller`, `recorder`, `topics`,
# `reconcile`, ...), plus the /router and /canceller entry points.
#
#   docker build -t hourglass .
#   docker run --rm hourglass router --help
#
# `make release VERSION=vX.Y.Z` builds it with docker buildx as
# ghcr.io/hourglass/hourglass:vX.Y.Z, the chart's default image.
#
# deploy/image_test.go runs this file's go build command, so a recipe that
# no longer builds fails `go test ./deploy/...`.

# Bases are pinned: the builder to a Go patch release, the runtime to the
# digest of gcr.io/distroless/static-debian12:nonroot (no shell, no package
# manager, CA certificates and tzdata only). Update both deliberately.
ARG GO_IMAGE=golang:1.26.8-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot@sha256:b7bb25d9f7c31d2bdd1982feb4dafcaf137703c7075dbe2febb41c24212b946f

FROM ${GO_IMAGE} AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
# What --version reports (internal/version); `make release` sets them. The
# build context has no .git, so go build records no revision itself.
ARG VERSION="" REVISION="" REVISION_TIME="" MODIFIED=""
# Static (no cgo), reproducible paths (-trimpath), no symbol table or DWARF.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/hourglass/hourglass/internal/version.Version=${VERSION} -X github.com/hourglass/hourglass/internal/version.Revision=${REVISION} -X github.com/hourglass/hourglass/internal/version.Time=${REVISION_TIME} -X github.com/hourglass/hourglass/internal/version.Modified=${MODIFIED}" -o /out/ ./cmd/hourglass ./cmd/router ./cmd/canceller

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/hourglass /hourglass
COPY --from=build /out/router /router
COPY --from=build /out/canceller /canceller
# distroless "nonroot": uid and gid 65532. The Helm chart runs it with a
# read-only root filesystem.
USER 65532:65532
EXPOSE 8080 8081 8082
ENTRYPOINT ["/hourglass"]
