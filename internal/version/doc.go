// Package version says which build of Hourglass is running: the version,
// the VCS revision and its time, whether the tree was modified, and the Go
// toolchain. Every binary prints it for --version (and `hourglass version`).
//
// The version is [Version] when set, else the main module's version from
// [runtime/debug.ReadBuildInfo]: the tag for `go install ...@vX.Y.Z`, a
// pseudo-version or "(devel)" for a local build. A release build sets it
// with the linker:
//
//	go build -ldflags "-X github.com/hourglass/hourglass/internal/version.Version=v1.2.3" ./cmd/...
//
// `make release VERSION=v1.2.3` does that for every binary and the image.
// The revision, its time and the modified flag come from the build info's
// vcs.* settings, which go build records when it builds inside a git
// clone: not for `go install ...@version`, not in the image's build context
// (which leaves .git out), not in a git worktree (go build looks for a .git
// directory) and not with -buildvcs=false. The release recipe sets
// [Revision], [Time] and [Modified] at link time as well, for those cases.
package version
