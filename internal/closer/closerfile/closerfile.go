package closerfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/httpcloser"
	"github.com/hourglass/hourglass/internal/closer/kafkacloser"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
)

// DefaultRateBurst is the default of Entry.RateBurst.
const DefaultRateBurst = 1

// File is a closers file.
type File struct {
	// Closers maps each task kind to its closer.
	Closers map[string]Entry `yaml:"closers"`
}

// Entry is the closer of one kind: exactly one of SQL, HTTP, Kafka and Log.
type Entry struct {
	SQL   *sqlcloser.Config   `yaml:"sql"`
	HTTP  *httpcloser.Config  `yaml:"http"`
	Kafka *kafkacloser.Config `yaml:"kafka"`
	// Log closes nothing and logs each task; written `log: {}`.
	Log *struct{} `yaml:"log"`
	// RateLimit bounds this kind's closes per second, on top of any limit
	// over all kinds. Zero, the default, means no limit of its own.
	RateLimit float64 `yaml:"rate_limit"`
	// RateBurst is the bucket size of RateLimit; default DefaultRateBurst.
	RateBurst int `yaml:"rate_burst"`
}

// Type names the closer of e: "sql", "http", "kafka" or "log"; "" if none
// is set.
func (e Entry) Type() string {
	switch {
	case e.SQL != nil:
		return "sql"
	case e.HTTP != nil:
		return "http"
	case e.Kafka != nil:
		return "kafka"
	case e.Log != nil:
		return "log"
	}
	return ""
}

// Load reads, decodes and validates the closers file at path. The error
// names the file and, for each problem, its place in it.
func Load(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, err
	}
	return Parse(b, path)
}

// Parse decodes and validates a closers file; name is used in errors. It
// reports every problem at once, in the order of the file, each on a line
// of its own as name:line: path: problem (test.yaml:7:
// closers.order-timeout.http.timeout: ...), under "name: N problems:" when
// there are several. Unknown keys are problems; a secret written as a plain
// string and a duration written without a unit get a hint.
func Parse(b []byte, name string) (File, error) {
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return File{}, fmt.Errorf("%s: empty; want a closers: map of task kinds", name)
		}
		return File{}, fmt.Errorf("%s: %w", name, err)
	}
	var f File
	d := decoder{lines: make(map[string]int)}
	d.decode(root.Content[0], reflect.ValueOf(&f).Elem(), "")
	f.applyDefaults()
	problems := d.problems
	var invalid closer.Problems
	errors.As(f.Validate(), &invalid)
	for _, p := range invalid {
		if !d.failedAt(p.Key) {
			problems = append(problems, placed{p, d.lineOf(p.Key)})
		}
	}
	if len(problems) == 0 {
		return f, nil
	}
	slices.SortStableFunc(problems, func(a, b placed) int { return a.line - b.line })
	var out strings.Builder
	if len(problems) > 1 {
		fmt.Fprintf(&out, "%s: %d problems:", name, len(problems))
	}
	for _, p := range problems {
		if out.Len() > 0 {
			out.WriteString("\n  ")
		}
		out.WriteString(name)
		if p.line > 0 {
			fmt.Fprintf(&out, ":%d", p.line)
		}
		out.WriteString(": " + p.Error())
	}
	return File{}, errors.New(out.String())
}

// applyDefaults sets the defaults of every entry and its closer.
func (f File) applyDefaults() {
	for kind, e := range f.Closers {
		if e.RateBurst == 0 {
			e.RateBurst = DefaultRateBurst
		}
		switch {
		case e.SQL != nil:
			c := e.SQL.WithDefaults()
			e.SQL = &c
		case e.HTTP != nil:
			c := e.HTTP.WithDefaults()
			e.HTTP = &c
		case e.Kafka != nil:
			c := e.Kafka.WithDefaults()
			e.Kafka = &c
		}
		f.Closers[kind] = e
	}
}

// Validate reports every problem of f as closer.Problems, each at its
// place in the file (closers.<kind>.<type>.<key>).
func (f File) Validate() error {
	var p closer.Problems
	if len(f.Closers) == 0 {
		p.Add("closers", "no task kinds")
	}
	for _, kind := range f.Kinds() {
		f.Closers[kind].check(&p, kind)
	}
	return p.Err()
}

// check adds the problems of e, the entry of kind, to p.
func (e Entry) check(p *closer.Problems, kind string) {
	at := "closers." + kind
	if kind == "" || len(kind) > 128 || !utf8.ValidString(kind) || strings.ContainsFunc(kind, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		p.Add(at, "a kind is at most 128 printable characters (the hourglass-kind header)")
	}
	n := 0
	for _, set := range []bool{e.SQL != nil, e.HTTP != nil, e.Kafka != nil, e.Log != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		p.Add(at, "set exactly one of sql, http, kafka and log")
	}
	if e.RateLimit < 0 || math.IsNaN(e.RateLimit) || math.IsInf(e.RateLimit, 0) {
		p.Add(at, "rate_limit: %v: want closes per second, 0 for no limit", e.RateLimit)
	}
	if e.RateBurst < 1 {
		p.Add(at, "rate_burst: %d: must be at least 1", e.RateBurst)
	}
	var err error
	switch {
	case e.SQL != nil:
		err = e.SQL.Validate()
	case e.HTTP != nil:
		err = e.HTTP.Validate()
	case e.Kafka != nil:
		err = e.Kafka.Validate()
	}
	var sub closer.Problems
	errors.As(err, &sub)
	for _, q := range sub {
		*p = append(*p, q.Under(at+"."+e.Type()))
	}
}

// Kinds returns the kinds of f, sorted.
func (f File) Kinds() []string {
	kinds := make([]string, 0, len(f.Closers))
	for k := range f.Closers {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}
