package dockerfile

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// Instruction is one instruction of a Dockerfile, continuation lines
// joined.
type Instruction struct {
	Line int    // where it starts, from 1
	Cmd  string // upper case: FROM, RUN, COPY, ...
	Args string // the rest, trimmed
}

// Stage is one FROM and the instructions under it.
type Stage struct {
	Image string // with the defaults of global ARGs substituted
	Name  string // after AS; "" for none
	Instr []Instruction
}

// File is a parsed Dockerfile.
type File struct {
	Name   string // as given to Parse; errors start with it
	Stages []Stage
}

// Parse reads a Dockerfile into stages, with the defaults of the ARGs
// before the first FROM substituted into the FROM lines. Blank lines and
// comments are skipped, comments inside a continued instruction too. name
// is the file's name for errors ("name:line: ...").
func Parse(name string, b []byte) (*File, error) {
	instrs, err := instructions(name, b)
	if err != nil {
		return nil, err
	}
	f := &File{Name: name}
	globals := map[string]string{}
	for _, in := range instrs {
		switch {
		case in.Cmd == "ARG" && len(f.Stages) == 0:
			k, def, _ := strings.Cut(in.Args, "=")
			globals[k] = def
		case in.Cmd == "FROM":
			fields := strings.Fields(in.Args)
			if len(fields) == 0 {
				return nil, fmt.Errorf("%s:%d: FROM without an image", name, in.Line)
			}
			st := Stage{Image: os.Expand(fields[0], func(k string) string { return globals[k] })}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				st.Name = fields[2]
			}
			f.Stages = append(f.Stages, st)
		case len(f.Stages) == 0:
			return nil, fmt.Errorf("%s:%d: %s before the first FROM", name, in.Line, in.Cmd)
		default:
			last := &f.Stages[len(f.Stages)-1]
			last.Instr = append(last.Instr, in)
		}
	}
	return f, nil
}

// instructions splits a Dockerfile into instructions.
func instructions(name string, b []byte) ([]Instruction, error) {
	var instrs []Instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(line, "#") {
			continue // a comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = n
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		instrs = append(instrs, Instruction{Line: start, Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args)})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("%s: the last instruction ends with a line continuation", name)
	}
	return instrs, nil
}
