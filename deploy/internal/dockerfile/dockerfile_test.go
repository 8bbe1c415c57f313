package dockerfile

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    []Stage
		wantErr string // a part of the error; "" for none
	}{
		{
			name: "stages with ARG defaults",
			in: `# syntax=docker/dockerfile:1
ARG GO_VERSION=1.26.8
ARG BASE=gcr.io/distroless/static:nonroot

FROM golang:${GO_VERSION} AS build
WORKDIR /src
FROM $BASE
USER 65532:65532
`,
			want: []Stage{
				{Image: "golang:1.26.8", Name: "build", Instr: []Instruction{{Line: 6, Cmd: "WORKDIR", Args: "/src"}}},
				{Image: "gcr.io/distroless/static:nonroot", Instr: []Instruction{{Line: 8, Cmd: "USER", Args: "65532:65532"}}},
			},
		},
		{
			name: "continuations and comments inside",
			in:   "FROM x as b\nrun a \\\n  # a comment\n  && b \\\n  c\nCOPY --from=b /o /o\n",
			want: []Stage{{Image: "x", Name: "b", Instr: []Instruction{
				{Line: 2, Cmd: "RUN", Args: "a  && b  c"},
				{Line: 6, Cmd: "COPY", Args: "--from=b /o /o"},
			}}},
		},
		{
			name: "ARG after FROM is an instruction",
			in:   "ARG V=1\nFROM img:$V\nARG V=2\n",
			want: []Stage{{Image: "img:1", Instr: []Instruction{{Line: 3, Cmd: "ARG", Args: "V=2"}}}},
		},
		{name: "unknown ARG expands empty", in: "FROM img:${NOPE}", want: []Stage{{Image: "img:"}}},
		{name: "empty", in: "\n# only a comment\n", want: nil},
		{name: "instruction before FROM", in: "RUN true\nFROM x", wantErr: "Dockerfile:1: RUN before the first FROM"},
		{name: "FROM without image", in: "FROM x\nFROM\n", wantErr: "Dockerfile:2: FROM without an image"},
		{name: "continuation at the end", in: "FROM x\nRUN a \\", wantErr: "Dockerfile: the last instruction ends with a line continuation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("Dockerfile", []byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse: %+v, %v; want an error containing %q", f, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Name != "Dockerfile" || !reflect.DeepEqual(f.Stages, tc.want) {
				t.Errorf("Parse = %q %+v, want Dockerfile %+v", f.Name, f.Stages, tc.want)
			}
		})
	}
}

// FuzzParse parses arbitrary text: it must not panic, and every stage's
// instructions come in line order with upper-case commands.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "FROM", "FROM x AS y\nRUN a \\\n b", "ARG A=1\nFROM $A\nENV X=1", "RUN x", "FROM x\n#c\n\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		file, err := Parse("Dockerfile", []byte(s))
		if err != nil {
			return
		}
		line := 0
		for _, st := range file.Stages {
			for _, in := range st.Instr {
				if in.Line <= line || in.Cmd != strings.ToUpper(in.Cmd) {
					t.Fatalf("instruction %+v after line %d", in, line)
				}
				line = in.Line
			}
		}
	})
}
