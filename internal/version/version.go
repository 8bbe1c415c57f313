package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set at link time with -ldflags "-X github.com/hourglass/hourglass/internal/version.Name=value".
// Empty (the default): what the build info records.
var (
	// Version is the release version, v1.2.3; it wins over the main
	// module's version in the build info.
	Version string
	// Revision stands for the build info's vcs.revision when go build did
	// not record it: in a git worktree, or with -buildvcs=false. A recorded
	// one wins; so for Time and Modified.
	Revision string
	// Time stands for vcs.time, as Revision does for vcs.revision.
	Time string
	// Modified ("true" or "false") stands for vcs.modified, as Revision
	// does for vcs.revision.
	Modified string
)

// devel is the version of a build with none recorded.
const devel = "(devel)"

// Info describes a build. The zero value is a build with nothing recorded.
type Info struct {
	Version   string // release or module version; "(devel)" when unknown
	Revision  string // VCS commit; "" when not recorded
	Time      string // commit time, RFC 3339; "" when not recorded
	Modified  bool   // the working tree had uncommitted changes
	GoVersion string // toolchain, e.g. go1.26.8
	Platform  string // GOOS/GOARCH
}

// Get returns the running binary's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, Info{Version: Version, Revision: Revision, Time: Time, Modified: Modified == "true"})
}

// fromBuildInfo builds Info from bi (nil when the binary has none) and the
// link-time values in linked (empty for none).
func fromBuildInfo(bi *debug.BuildInfo, linked Info) Info {
	i := Info{Version: linked.Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if i.Version == "" {
			i.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Revision = s.Value
			case "vcs.time":
				i.Time = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if i.Revision == "" { // go build recorded no vcs.* settings
		i.Revision, i.Time, i.Modified = linked.Revision, linked.Time, linked.Modified
	}
	if i.Version == "" {
		i.Version = devel
	}
	return i
}

// String is the one-line report of --version, without the program name:
//
//	v1.2.3 (revision 0123abcd..., 2026-11-24T04:17:10Z, modified) go1.26.8 linux/amd64
//
// The parenthesis is left out when no revision was recorded.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	if i.Revision != "" {
		fmt.Fprintf(&b, " (revision %s", i.Revision)
		if i.Time != "" {
			fmt.Fprintf(&b, ", %s", i.Time)
		}
		if i.Modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %s %s", i.GoVersion, i.Platform)
	return b.String()
}
