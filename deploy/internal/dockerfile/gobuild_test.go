package dockerfile

import (
	"reflect"
	"strings"
	"testing"
)

func TestGoBuild(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string // the instructions after FROM golang
		want    GoBuild
		wantOK  bool
		wantErr string // a part of the error; "" for none
	}{
		{
			name: "env, flags and -o",
			in: `ENV GOFLAGS=-mod=readonly GOTOOLCHAIN=local
RUN --mount=type=cache,target=/root/.cache/go-build \
    go mod download && \
    CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" -o /out/ ./cmd/...`,
			want: GoBuild{
				Env:  []string{"GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOOS=linux"},
				Args: []string{"-trimpath", "-ldflags", "-s -w", "-o", "/out/", "./cmd/..."},
				Out:  "/out/",
			},
			wantOK: true,
		},
		{
			name:   "the first of two",
			in:     "RUN go build -o /a ./a\nRUN go build -o /b ./b",
			want:   GoBuild{Args: []string{"-o", "/a", "./a"}, Out: "/a"},
			wantOK: true,
		},
		{
			name:   "without -o",
			in:     "RUN go build ./...",
			want:   GoBuild{Args: []string{"./..."}},
			wantOK: true,
		},
		{name: "go vet is not a build", in: "RUN go vet ./... && go", wantOK: false},
		{name: "no RUN", in: "COPY . .", wantOK: false},
		{name: "not an assignment before go", in: "RUN nice go build ./...", wantErr: `Dockerfile:2: "nice" before go build is not an environment assignment`},
		{name: "bad quoting", in: "RUN go build -ldflags '-s", wantErr: "Dockerfile:2: unterminated '"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("Dockerfile", []byte("FROM golang:1.26\n"+tc.in))
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := f.GoBuild(f.Stages[0])
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("GoBuild = %+v, %v, %v; want an error containing %q", got, ok, err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.wantOK || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("GoBuild = %+v, %v, %v; want %+v, %v", got, ok, err, tc.want, tc.wantOK)
			}
		})
	}
}

func TestSplitWords(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want [][]string
	}{
		{in: nil, want: [][]string{{}}},
		{in: []string{"a", "b"}, want: [][]string{{"a", "b"}}},
		{in: []string{"a", "&&", "b", "c"}, want: [][]string{{"a"}, {"b", "c"}}},
		{in: []string{"&&", "a", "&&"}, want: [][]string{{}, {"a"}, {}}},
	} {
		var got [][]string
		for run := range splitWords(tc.in, "&&") {
			got = append(got, append([]string{}, run...))
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitWords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
