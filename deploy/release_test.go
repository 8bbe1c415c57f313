package deploy

// Tests of the release recipe (../Makefile, ../scripts/release.sh) against
// the chart and the image recipe; .ci/run runs the recipe itself.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestReleaseImageIsChartDefault checks that the image `make release`
// builds, the Makefile's IMAGE, is the image the chart runs by default:
// image.registry/image.repository in values.yaml. The tag needs no check:
// the recipe tags the image with VERSION and packages the chart with
// --app-version VERSION, the chart's default tag.
func TestReleaseImageIsChartDefault(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE \?= (\S+)\s*$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("../Makefile: no IMAGE ?= <image> line")
	}
	image := string(m[1])

	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Image struct{ Registry, Repository, Tag, Digest string }
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	chart := values.Image.Repository
	if r := values.Image.Registry; r != "" {
		chart = strings.TrimSuffix(r, "/") + "/" + chart
	}
	if chart != image {
		t.Errorf("the chart's default image is %s, the Makefile's IMAGE (what make release builds) is %s", chart, image)
	}
	if values.Image.Tag != "" || values.Image.Digest != "" {
		t.Errorf("values.yaml image.tag %q, image.digest %q: want both empty, so that the chart runs the image of its appVersion", values.Image.Tag, values.Image.Digest)
	}
}

// TestReleaseStampsVersionVars checks that every -X of internal/version in
// the release script and the Dockerfile names a string variable of that
// package: the linker ignores an -X of a name that does not exist, so a
// renamed variable would silently leave binaries without their version.
func TestReleaseStampsVersionVars(t *testing.T) {
	vars := versionVars(t)
	x := regexp.MustCompile(`github\.com/hourglass/hourglass/internal/version\.(\w+)=`)
	for _, path := range []string{"../scripts/release.sh", dockerfilePath} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, m := range x.FindAllSubmatch(b, -1) {
			name := string(m[1])
			found[name] = true
			if !vars[name] {
				t.Errorf("%s: -X .../internal/version.%s: no such string variable in internal/version", path, name)
			}
		}
		for name := range vars {
			if !found[name] {
				t.Errorf("%s does not set internal/version.%s", path, name)
			}
		}
	}
}

// versionVars returns the package-level string variables of
// internal/version.
func versionVars(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("../internal/version/*.go")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "string" {
					for _, n := range vs.Names {
						vars[n.Name] = true
					}
				}
			}
		}
	}
	if len(vars) == 0 {
		t.Fatal("../internal/version: no string variables")
	}
	return vars
}

// TestChartDefaultTagIsReleaseTag checks that the chart, as it is in the
// repository, runs the image tag `make release` writes for its version:
// `v` and the chart's version (scripts/release.sh packages the chart with
// --version X.Y.Z --app-version vX.Y.Z and tags the image vX.Y.Z), so that
// `helm template` from a checkout names the tag of that release, not X.Y.Z.
func TestChartDefaultTagIsReleaseTag(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version    string `yaml:"version"`
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	if want := "v" + chart.Version; chart.AppVersion != want {
		t.Errorf("Chart.yaml appVersion %q, want %q: make release VERSION=%s packages the chart with that appVersion", chart.AppVersion, want, want)
	}
	want := "ghcr.io/hourglass/hourglass:v" + chart.Version
	seen := 0
	for _, o := range mustRender(t, "") {
		ps, ok := podSpecOf(t, o)
		if !ok {
			continue
		}
		for _, c := range ps.Containers {
			seen++
			if c.Image != want {
				t.Errorf("%s: container %s runs %s, want %s", o, c.Name, c.Image, want)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no containers rendered")
	}
}
