package deploy

// Tests of the image recipe, ../Dockerfile and ../.dockerignore, without a
// container engine.

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

var goVersion = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`)

// versionAtLeast reports whether Go version have (1.26.8) is at least want
// (1.26.0).
func versionAtLeast(have, want string) bool {
	h, w := goVersion.FindStringSubmatch(have), goVersion.FindStringSubmatch(want)
	if h == nil || w == nil {
		return false
	}
	for i := 1; i <= 3; i++ {
		a, _ := strconv.Atoi(h[i])
		b, _ := strconv.Atoi(w[i])
		if a != b {
			return a > b
		}
	}
	return true
}

var imageDigest = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// imageTag returns the tag of an image reference ("" for none).
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndex(ref, "/")
	if i := strings.LastIndex(ref, ":"); i > slash {
		return ref[i+1:]
	}
	return ""
}

// TestDockerfile checks the image recipe without a container engine: pinned
// bases, a builder new enough for go.mod, a non-root user, and the build
// itself, run with the Dockerfile's own command and flags; the binaries it
// copies into the image must exist, be static, stripped and free of local
// paths, and run.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	f := parseDockerfile(t)
	checkBases(t, f.stages)
	checkBuilder(t, f.stages[0])
	copies := checkRuntimeStage(t, f.stages[len(f.stages)-1])

	gb, outDir := imageBinaries(t)
	if !slices.Contains(gb.Env, "CGO_ENABLED=0") {
		t.Errorf("go build environment %v: want CGO_ENABLED=0 (the runtime base has no libc)", gb.Env)
	}
	for _, flag := range []string{"-trimpath", "-ldflags"} {
		if !slices.Contains(gb.Args, flag) {
			t.Errorf("go build %v: no %s", gb.Args, flag)
		}
	}
	repoRoot, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for dst, src := range copies {
		rel, ok := strings.CutPrefix(src, strings.TrimSuffix(gb.Out, "/"))
		if !ok {
			t.Errorf("COPY %s %s: not under go build -o %s", src, dst, gb.Out)
			continue
		}
		bin := filepath.Join(outDir, rel)
		checkStaticBinary(t, bin, repoRoot)
	}
	out, err := exec.CommandContext(t.Context(), filepath.Join(outDir, "hourglass"), "--help").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("Usage: hourglass <command>")) {
		t.Errorf("hourglass --help: %v\n%s", err, out)
	}
}

// checkBases checks that every base image is resolved from the ARG
// defaults and pinned, by a version tag or a digest, and the runtime base
// by a digest. A FROM of an earlier stage is no base.
func checkBases(t *testing.T, stages []stage) {
	t.Helper()
	names := map[string]bool{}
	for _, st := range stages {
		if names[st.image] {
			continue // FROM an earlier stage
		}
		if st.image == "" || strings.Contains(st.image, "$") {
			t.Errorf("FROM %q: not resolved from the ARG defaults", st.image)
		}
		tag := imageTag(st.image)
		if (tag == "" || tag == "latest") && !imageDigest.MatchString(st.image) {
			t.Errorf("FROM %s: not pinned (give a version tag or a digest)", st.image)
		}
		if st.name != "" {
			names[st.name] = true
		}
	}
	runtime := stages[len(stages)-1]
	if !imageDigest.MatchString(runtime.image) {
		t.Errorf("runtime base %s: not pinned by digest", runtime.image)
	}
}

// checkBuilder checks that the builder can build the module: golang:<version>
// of at least go.mod's go directive.
func checkBuilder(t *testing.T, build stage) {
	t.Helper()
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(mod)
	if want == nil {
		t.Fatal("go.mod: no go directive")
	}
	builder := build.image
	if !strings.HasPrefix(builder, "golang:") || !versionAtLeast(imageTag(builder), string(want[1])) {
		t.Errorf("builder %s: want golang:<version> of at least go.mod's go %s", builder, want[1])
	}
}

// checkRuntimeStage checks the runtime stage: a non-root USER, the exec
// form ENTRYPOINT /hourglass copied from a build stage, and no RUN. It
// returns what the stage copies from build stages: image path -> source.
func checkRuntimeStage(t *testing.T, runtime stage) map[string]string {
	t.Helper()
	var user, entrypoint string
	copies := map[string]string{} // image path -> source in the build stage
	for _, n := range runtime.nodes {
		words := nodeWords(n)
		switch strings.ToUpper(n.Value) {
		case "USER":
			user = strings.Join(words, " ")
		case "ENTRYPOINT":
			if !n.Attributes["json"] || len(words) == 0 {
				t.Errorf("%s:%d: %s: want the exec form, a JSON list", dockerfilePath, n.StartLine, n.Original)
				continue
			}
			entrypoint = words[0]
		case "COPY":
			from := slices.ContainsFunc(n.Flags, func(f string) bool { return strings.HasPrefix(f, "--from=") })
			if from && len(words) == 2 {
				copies[words[1]] = words[0]
			}
		case "RUN":
			t.Errorf("%s:%d: RUN in the runtime stage; the distroless base has no shell", dockerfilePath, n.StartLine)
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); (err != nil && uid != "nonroot") || (err == nil && n == 0) {
		t.Errorf("USER %q: want a non-root user (65532, distroless nonroot)", user)
	}
	if entrypoint != "/hourglass" {
		t.Errorf("ENTRYPOINT %q, want /hourglass", entrypoint)
	}
	if _, ok := copies["/hourglass"]; !ok {
		t.Errorf("nothing is copied to /hourglass: %v", copies)
	}
	return copies
}

// nodeWords returns the words of an instruction after its flags, as the
// parser gives them.
func nodeWords(n *parser.Node) []string {
	var words []string
	for w := n.Next; w != nil; w = w.Next {
		words = append(words, w.Value)
	}
	return words
}

// checkStaticBinary checks that bin is a static ELF executable without a
// symbol table and without the build machine's paths.
func checkStaticBinary(t *testing.T, bin, repoRoot string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Errorf("%s: %v", filepath.Base(bin), err)
		return
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: dynamically linked; the runtime base has no libc", filepath.Base(bin))
			break
		}
	}
	if f.Section(".symtab") != nil {
		t.Errorf("%s: has a symbol table; want -ldflags \"-s -w\"", filepath.Base(bin))
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(repoRoot)) {
		t.Errorf("%s: contains the path %s; want -trimpath", filepath.Base(bin), repoRoot)
	}
}

// TestDockerignore checks that the build context keeps every file the image
// build reads (the Go files and embedded files of the binaries' packages,
// go.mod, go.sum) and leaves out the rest of the repository.
func TestDockerignore(t *testing.T) {
	t.Parallel()
	ig := readDockerignore(t)
	needed := imageBuildFiles(t)
	if len(needed) < 50 {
		t.Fatalf("go list found only %d files", len(needed))
	}
	for _, f := range needed {
		if ignored(t, ig, f) {
			t.Errorf("%s excludes %s, which the image build needs", dockerignorePath, f)
		}
	}
	for _, f := range []string{".git/config", ".tools/bin/helm", "bin/hourglass", "deploy/helpers_test.go", "internal/cmd/hourglasscmd/hourglasscmd_test.go", "README.md"} {
		if !ignored(t, ig, f) {
			t.Errorf("%s sends %s to the build context; the build does not need it", dockerignorePath, f)
		}
	}
}

// imageBuildFiles returns the files the image build reads, relative to the
// repository, slash separated: go.mod, go.sum, and the Go files and
// embedded files of the packages of the binaries, as go list sees them.
func imageBuildFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps",
		"-f", `{{if .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}}|{{.}}{{end}}{{range .EmbedFiles}}|{{.}}{{end}}{{end}}{{end}}`,
		"./cmd/hourglass", "./cmd/router", "./cmd/canceller")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	needed := []string{"go.mod", "go.sum"}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		parts := strings.Split(line, "|")
		dir, err := filepath.Rel(root, parts[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range parts[1:] {
			needed = append(needed, filepath.ToSlash(filepath.Join(dir, f)))
		}
	}
	return needed
}
