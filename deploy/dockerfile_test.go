package deploy

// The image recipe read as the image build reads it, without a container
// engine: ../Dockerfile with BuildKit's own parser and word expansion, and
// ../.dockerignore with the pattern matcher of the Docker client and
// BuildKit.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// recipe is a Dockerfile as BuildKit's parser reads it, in stages.
type recipe struct {
	stages []stage
	lex    *shell.Lex // with the file's escape character
}

// stage is one FROM and the instructions under it.
type stage struct {
	image string         // the FROM image, the defaults of the ARGs before the first FROM expanded
	name  string         // after AS; "" for none
	nodes []*parser.Node // its instructions
}

// parseRecipe parses a Dockerfile into stages. A warning of the parser (an
// empty continuation line, say) is an error: the recipe should build
// without one.
func parseRecipe(b []byte) (*recipe, error) {
	res, err := parser.Parse(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	if len(res.Warnings) > 0 {
		w := res.Warnings[0]
		if w.Location == nil {
			return nil, errors.New(w.Short)
		}
		return nil, fmt.Errorf("line %d: %s", w.Location.Start.Line, w.Short)
	}
	rc := &recipe{lex: shell.NewLex(res.EscapeToken)}
	var globals []string // the ARGs before the first FROM, NAME=default
	for _, n := range res.AST.Children {
		cmd := strings.ToLower(n.Value)
		switch {
		case cmd == "from":
			st, err := rc.from(n, globals)
			if err != nil {
				return nil, err
			}
			rc.stages = append(rc.stages, st)
		case len(rc.stages) > 0:
			last := &rc.stages[len(rc.stages)-1]
			last.nodes = append(last.nodes, n)
		case cmd == "arg":
			args, err := rc.args(n, globals)
			if err != nil {
				return nil, err
			}
			globals = append(globals, args...)
		default:
			return nil, fmt.Errorf("line %d: %s before the first FROM", n.StartLine, n.Value)
		}
	}
	return rc, nil
}

// from reads a FROM instruction: its image, with globals expanded, and
// its stage name.
func (rc *recipe) from(n *parser.Node, globals []string) (stage, error) {
	if n.Next == nil {
		return stage{}, fmt.Errorf("line %d: FROM without an image", n.StartLine)
	}
	image, err := rc.expand(n.Next.Value, globals)
	if err != nil {
		return stage{}, fmt.Errorf("line %d: FROM %s: %w", n.StartLine, n.Next.Value, err)
	}
	st := stage{image: image}
	if as := n.Next.Next; as != nil && strings.EqualFold(as.Value, "AS") && as.Next != nil {
		st.name = as.Next.Value
	}
	return st, nil
}

// args returns the NAME=value of an ARG instruction, each default expanded
// with env and the names before it; a NAME without a default is empty, as
// in a build given no --build-arg.
func (rc *recipe) args(n *parser.Node, env []string) ([]string, error) {
	var out []string
	for w := n.Next; w != nil; w = w.Next {
		name, def, _ := strings.Cut(w.Value, "=")
		v, err := rc.expand(def, slices.Concat(env, out))
		if err != nil {
			return nil, fmt.Errorf("line %d: ARG %s: %w", n.StartLine, name, err)
		}
		out = append(out, name+"="+v)
	}
	return out, nil
}

// envs returns the NAME=value of an ENV instruction, values expanded with
// env. The parser gives its words in threes: name, value, separator.
func (rc *recipe) envs(n *parser.Node, env []string) ([]string, error) {
	var out []string
	for k := n.Next; k != nil && k.Next != nil; k = k.Next.Next.Next {
		v, err := rc.expand(k.Next.Value, env)
		if err != nil {
			return nil, fmt.Errorf("line %d: ENV %s: %w", n.StartLine, k.Value, err)
		}
		out = append(out, k.Value+"="+v)
		if k.Next.Next == nil {
			break
		}
	}
	return out, nil
}

// expand is word with its quotes removed and ${NAME} replaced from env.
func (rc *recipe) expand(word string, env []string) (string, error) {
	v, _, err := rc.lex.ProcessWord(word, shell.EnvsFromSlice(env))
	return v, err
}

// goBuild is the go build command of a RUN instruction.
type goBuild struct {
	Env  []string // the stage's ENV, then the NAME=value words before "go"
	Args []string // after "go build"
	Out  string   // the -o argument; "" for none
}

// goBuild returns the first go build command of st's RUN instructions,
// and false if there is none. A shell-form RUN is split into words by
// BuildKit's word expansion with the stage's ARG and ENV values, as
// /bin/sh splits a command of plain words, quotes and ${NAME}, and into
// commands at && words. Words before "go" that are not NAME=value are an
// error.
func (rc *recipe) goBuild(st stage) (goBuild, bool, error) {
	var env, stageEnv []string // what a RUN sees (ARG and ENV); the ENV alone
	for _, n := range st.nodes {
		var words, vars []string
		var err error
		switch strings.ToLower(n.Value) {
		case "arg":
			vars, err = rc.args(n, env)
		case "env":
			vars, err = rc.envs(n, env)
			stageEnv = append(stageEnv, vars...)
		case "run":
			words, err = rc.runWords(n, env)
		}
		if err != nil {
			return goBuild{}, false, err
		}
		env = append(env, vars...)
		for cmd := range splitWords(words, "&&") {
			gb, ok, err := goBuildOf(cmd, stageEnv)
			if err != nil {
				return goBuild{}, false, fmt.Errorf("line %d: %w", n.StartLine, err)
			}
			if ok {
				return gb, true, nil
			}
		}
	}
	return goBuild{}, false, nil
}

// runWords returns the words of a RUN instruction: as written in the exec
// form, expanded with env in the shell form.
func (rc *recipe) runWords(n *parser.Node, env []string) ([]string, error) {
	var words []string
	if n.Attributes["json"] {
		for w := n.Next; w != nil; w = w.Next {
			words = append(words, w.Value)
		}
		return words, nil
	}
	if n.Next == nil {
		return nil, nil
	}
	words, err := rc.lex.ProcessWords(n.Next.Value, shell.EnvsFromSlice(env))
	if err != nil {
		return nil, fmt.Errorf("line %d: RUN: %w", n.StartLine, err)
	}
	return words, nil
}

// goBuildOf reads cmd, the words of one command, as a go build command.
func goBuildOf(cmd, stageEnv []string) (goBuild, bool, error) {
	i := slices.Index(cmd, "go")
	if i < 0 || i+1 >= len(cmd) || cmd[i+1] != "build" {
		return goBuild{}, false, nil
	}
	for _, e := range cmd[:i] {
		if !strings.Contains(e, "=") {
			return goBuild{}, false, fmt.Errorf("%q before go build is not an environment assignment", e)
		}
	}
	gb := goBuild{Env: slices.Concat(stageEnv, cmd[:i]), Args: cmd[i+2:]}
	for j, a := range gb.Args {
		if a == "-o" && j+1 < len(gb.Args) {
			gb.Out = gb.Args[j+1]
		}
	}
	return gb, true, nil
}

// splitWords yields the runs of words between separators.
func splitWords(words []string, sep string) func(func([]string) bool) {
	return func(yield func([]string) bool) {
		start := 0
		for i, w := range words {
			if w == sep {
				if !yield(words[start:i]) {
					return
				}
				start = i + 1
			}
		}
		yield(words[start:])
	}
}

// readDockerignore reads the .dockerignore as the Docker client and
// BuildKit do.
func readDockerignore(t *testing.T) *patternmatcher.PatternMatcher {
	t.Helper()
	f, err := os.Open(dockerignorePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatalf("%s: %v", dockerignorePath, err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf("%s: %v", dockerignorePath, err)
	}
	return pm
}

// ignored reports whether the build context leaves out path (slash
// separated, relative to the context): the last pattern that matches it
// or a directory above it decides.
func ignored(t *testing.T, pm *patternmatcher.PatternMatcher, path string) bool {
	t.Helper()
	out, err := pm.MatchesOrParentMatches(path)
	if err != nil {
		t.Fatalf("%s: %s: %v", dockerignorePath, path, err)
	}
	return out
}

// TestGoBuildOfRecipe pins how the image tests read a go build command
// out of a Dockerfile: the stage's ENV, assignments before go, a RUN's
// flags, ARG values in the words, && between commands, the exec form.
func TestGoBuildOfRecipe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string // the instructions after FROM golang
		want    goBuild
		wantOK  bool
		wantErr string // a part of the error; "" for none
	}{
		{
			name: "env, arg, flags and -o",
			in: `ENV GOFLAGS=-mod=readonly GOTOOLCHAIN="local"
ARG VERSION="" REVISION=abc
RUN --mount=type=cache,target=/root/.cache/go-build \
    go mod download && \
    CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w -X v.V=${VERSION} -X v.R=${REVISION}" -o /out/ ./cmd/...`,
			want: goBuild{
				Env:  []string{"GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOOS=linux"},
				Args: []string{"-trimpath", "-ldflags", "-s -w -X v.V= -X v.R=abc", "-o", "/out/", "./cmd/..."},
				Out:  "/out/",
			},
			wantOK: true,
		},
		{
			name:   "the first of two",
			in:     "RUN go build -o /a ./a\nRUN go build -o /b ./b",
			want:   goBuild{Args: []string{"-o", "/a", "./a"}, Out: "/a"},
			wantOK: true,
		},
		{
			name:   "exec form",
			in:     `RUN ["go", "build", "-o", "/a", "./a"]`,
			want:   goBuild{Args: []string{"-o", "/a", "./a"}, Out: "/a"},
			wantOK: true,
		},
		{name: "go vet is not a build", in: "RUN go vet ./... && go", wantOK: false},
		{name: "no RUN", in: "COPY . .", wantOK: false},
		{name: "not an assignment before go", in: "RUN nice go build ./...", wantErr: `line 2: "nice" before go build is not an environment assignment`},
		{name: "bad quoting", in: "RUN go build -ldflags '-s", wantErr: "line 2: RUN: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := parseRecipe([]byte("FROM golang:1.26\n" + tc.in))
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := rc.goBuild(rc.stages[0])
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("goBuild = %+v, %v, %v; want an error containing %q", got, ok, err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.wantOK || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("goBuild = %+v, %v, %v; want %+v, %v", got, ok, err, tc.want, tc.wantOK)
			}
		})
	}
}

// TestParseRecipe: the stages of a Dockerfile, FROM images expanded from
// the ARGs before the first FROM, and what BuildKit warns about refused.
func TestParseRecipe(t *testing.T) {
	rc, err := parseRecipe([]byte("# syntax=docker/dockerfile:1\nARG A=golang:1.26 B=\"distroless:static\"\nFROM ${A} as build\nRUN true\nFROM $B\nCOPY --from=build /a /a\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.stages) != 2 || rc.stages[0].image != "golang:1.26" || rc.stages[0].name != "build" || len(rc.stages[0].nodes) != 1 ||
		rc.stages[1].image != "distroless:static" || rc.stages[1].name != "" || len(rc.stages[1].nodes) != 1 {
		t.Errorf("stages %+v", rc.stages)
	}
	for in, want := range map[string]string{
		"RUN true\n":                "line 1: RUN before the first FROM",
		"FROM a\nRUN a \\\n\n  b\n": "line 4: Empty continuation line",
		"ARG A='x\nFROM $A\n":       "line 1: ARG A: ",
	} {
		if _, err := parseRecipe([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseRecipe(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}
