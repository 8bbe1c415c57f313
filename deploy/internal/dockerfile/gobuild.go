package dockerfile

import (
	"fmt"
	"slices"
	"strings"
)

// GoBuild is the go build command of a RUN instruction.
type GoBuild struct {
	Env  []string // the stage's ENV words, then the NAME=value words before "go"
	Args []string // after "go build"
	Out  string   // the -o argument; "" for none
}

// GoBuild returns the first go build command in st's RUN instructions, and
// false if there is none. A RUN's flags (--mount=..., --network=...) are
// skipped, and its commands are split at && words. Words before "go" that
// are not NAME=value assignments are an error.
func (f *File) GoBuild(st Stage) (GoBuild, bool, error) {
	var stageEnv []string
	for _, in := range st.Instr {
		if in.Cmd == "ENV" {
			stageEnv = append(stageEnv, strings.Fields(in.Args)...)
			continue
		}
		if in.Cmd != "RUN" {
			continue
		}
		words, err := ShellWords(in.Args)
		if err != nil {
			return GoBuild{}, false, fmt.Errorf("%s:%d: %w", f.Name, in.Line, err)
		}
		for len(words) > 0 && strings.HasPrefix(words[0], "--") {
			words = words[1:] // --mount=..., --network=...
		}
		for cmd := range splitWords(words, "&&") {
			i := slices.Index(cmd, "go")
			if i < 0 || i+1 >= len(cmd) || cmd[i+1] != "build" {
				continue
			}
			for _, e := range cmd[:i] {
				if !strings.Contains(e, "=") {
					return GoBuild{}, false, fmt.Errorf("%s:%d: %q before go build is not an environment assignment", f.Name, in.Line, e)
				}
			}
			gb := GoBuild{Env: append(slices.Clone(stageEnv), cmd[:i]...), Args: cmd[i+2:]}
			for j, a := range gb.Args {
				if a == "-o" && j+1 < len(gb.Args) {
					gb.Out = gb.Args[j+1]
				}
			}
			return gb, true, nil
		}
	}
	return GoBuild{}, false, nil
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
