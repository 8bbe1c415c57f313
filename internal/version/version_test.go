package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-trimpath", Value: "true"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-24T04:17:10Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name   string
		bi     *debug.BuildInfo
		linked Info
		want   Info
	}{
		{
			name: "no build info",
			want: Info{Version: "(devel)", GoVersion: runtime.Version(), Platform: platform},
		},
		{
			name:   "no build info, version set by the linker",
			linked: Info{Version: "v1.2.3"},
			want:   Info{Version: "v1.2.3", GoVersion: runtime.Version(), Platform: platform},
		},
		{
			name: "go install module@v1.2.3: a version, no vcs",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/hourglass/hourglass", Version: "v1.2.3"}},
			want: Info{Version: "v1.2.3", GoVersion: "go1.26.0", Platform: platform},
		},
		{
			name: "local build in a modified checkout",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261124041710-0123456789ab+dirty"}, Settings: vcs},
			want: Info{
				Version:   "v0.0.0-20261124041710-0123456789ab+dirty",
				Revision:  "0123456789abcdef0123456789abcdef01234567",
				Time:      "2026-11-24T04:17:10Z",
				Modified:  true,
				GoVersion: "go1.26.8",
				Platform:  platform,
			},
		},
		{
			name:   "release build: the linker's version wins, the recorded revision too",
			bi:     &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs[:4]},
			linked: Info{Version: "v1.2.3", Revision: "fedcba", Time: "2026-01-01T00:00:00Z", Modified: true},
			want: Info{
				Version:   "v1.2.3",
				Revision:  "0123456789abcdef0123456789abcdef01234567",
				Time:      "2026-11-24T04:17:10Z",
				GoVersion: "go1.26.8",
				Platform:  platform,
			},
		},
		{
			name:   "release build in a worktree: no vcs recorded, the linker's used",
			bi:     &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs[:1]},
			linked: Info{Version: "v1.2.3", Revision: "fedcba", Time: "2026-01-01T00:00:00Z", Modified: true},
			want: Info{
				Version:   "v1.2.3",
				Revision:  "fedcba",
				Time:      "2026-01-01T00:00:00Z",
				Modified:  true,
				GoVersion: "go1.26.8",
				Platform:  platform,
			},
		},
		{
			name: "empty module version",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8"},
			want: Info{Version: "(devel)", GoVersion: "go1.26.8", Platform: platform},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fromBuildInfo(tt.bi, tt.linked); got != tt.want {
				t.Errorf("fromBuildInfo:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name string
		info Info
		want string
	}{
		{
			name: "everything",
			info: Info{Version: "v1.2.3", Revision: "abc", Time: "2026-11-24T04:17:10Z", Modified: true, GoVersion: "go1.26.8", Platform: "linux/arm64"},
			want: "v1.2.3 (revision abc, 2026-11-24T04:17:10Z, modified) go1.26.8 linux/arm64",
		},
		{
			name: "clean",
			info: Info{Version: "v1.2.3", Revision: "abc", Time: "2026-11-24T04:17:10Z", GoVersion: "go1.26.8", Platform: "linux/arm64"},
			want: "v1.2.3 (revision abc, 2026-11-24T04:17:10Z) go1.26.8 linux/arm64",
		},
		{
			name: "no vcs",
			info: Info{Version: "v1.2.3", GoVersion: "go1.26.8", Platform: "darwin/arm64"},
			want: "v1.2.3 go1.26.8 darwin/arm64",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.info.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestGet checks the test binary's own Info: the Go version and platform
// it runs on, and a version even though go test records none.
func TestGet(t *testing.T) {
	got := Get()
	if got.Version == "" {
		t.Error("Version is empty; want (devel) at least")
	}
	if got.GoVersion != runtime.Version() {
		t.Errorf("GoVersion = %q, want %q", got.GoVersion, runtime.Version())
	}
	if got.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("Platform = %q", got.Platform)
	}
	if !strings.HasPrefix(got.String(), got.Version+" ") {
		t.Errorf("String() = %q: want it to start with the version", got.String())
	}
}
