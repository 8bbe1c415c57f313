package closerfile

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/suggest"
)

// placed is a problem of a closers file at its line (0 if not known). Its
// key is its dotted path: closers.order-timeout.http.timeout.
type placed struct {
	*closer.Problem
	line int
}

// decoder decodes a YAML document into a Go value by walking both together,
// so that it reports every problem at once, each with its dotted path and
// line (the package doc says why yaml's Decoder does not). It handles
// structs by their yaml tags (not inline ones, which the closers file does
// not use), maps with string keys and pointers; other values, and types
// that decode themselves (such as credential.Secret), are decoded by yaml,
// except time.Duration, which wants a string.
type decoder struct {
	problems []placed
	// lines is the line of each path seen, for placing validation errors.
	lines map[string]int
}

var (
	durationType    = reflect.TypeFor[time.Duration]()
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	var p closer.Problems
	p.Add(path, format, args...)
	d.problems = append(d.problems, placed{p[0], n.Line})
}

// failedAt reports whether path is at or under the path of a problem met
// while decoding (a problem of the whole file is above every path): a
// value that did not decode has its zero value, whose validation error
// would only repeat the problem.
func (d *decoder) failedAt(path string) bool {
	for _, p := range d.problems {
		if p.Key == "" || path == p.Key || strings.HasPrefix(path, p.Key+".") {
			return true
		}
	}
	return false
}

// lineOf is the line of path, or of its nearest parent that has one.
func (d *decoder) lineOf(path string) int {
	for {
		if l, ok := d.lines[path]; ok {
			return l
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
}

// decode decodes n into v, which is settable, at path.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if _, seen := d.lines[path]; !seen {
		d.lines[path] = n.Line
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // leaves the zero value, as yaml does
	}
	t := v.Type()
	switch {
	case t == durationType:
		d.duration(n, v, path)
	case reflect.PointerTo(t).Implements(unmarshalerType), reflect.PointerTo(t).Implements(textType):
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(n, path, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(n, v.Elem(), path)
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			names, _ := keysOf(t)
			d.fail(n, path, "want a mapping of %s, got %s", strings.Join(names, ", "), describe(n))
			return
		}
		d.fields(n, v, path, make(map[string]bool))
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		d.mapping(n, v, path)
	default:
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(n, path, "want %s, got %s", want(t), describe(n))
		}
	}
}

// fields decodes mapping n into struct v, each key into the field of that
// yaml name; seen holds the keys already set. Merge keys (<<: *anchor) are
// decoded first, so the mapping's own keys win.
func (d *decoder) fields(n *yaml.Node, v reflect.Value, path string, seen map[string]bool) {
	names, index := keysOf(v.Type())
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, val := n.Content[i], n.Content[i+1]; k.Value == "<<" {
			d.merge(val, v, path)
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Value == "<<" {
			continue
		}
		at := join(path, k.Value)
		f, ok := index[k.Value]
		switch {
		case !ok:
			d.fail(k, at, "%s", unknownKey(k.Value, names))
		case seen[k.Value]:
			d.fail(k, at, "set twice")
		default:
			seen[k.Value] = true
			d.lines[at] = k.Line
			d.decode(val, v.Field(f), at)
		}
	}
}

// merge decodes the mapping, or list of mappings, of a merge key into v.
func (d *decoder) merge(n *yaml.Node, v reflect.Value, path string) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		d.fields(n, v, path, make(map[string]bool))
	case yaml.SequenceNode:
		for _, m := range n.Content {
			d.merge(m, v, path)
		}
	default:
		d.fail(n, path, "<< merges a mapping, got %s", describe(n))
	}
}

// mapping decodes mapping n into map v.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping, got %s", describe(n))
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	seen := make(map[string]bool)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		at := join(path, k.Value)
		if seen[k.Value] {
			d.fail(k, at, "set twice")
			continue
		}
		seen[k.Value] = true
		d.lines[at] = k.Line
		elem := reflect.New(t.Elem()).Elem()
		d.decode(val, elem, at)
		v.SetMapIndex(reflect.ValueOf(k.Value).Convert(t.Key()), elem)
	}
}

// duration decodes a time.Duration, which is written as a string with a
// unit: a bare number would be nanoseconds, which nobody means.
func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	const hint = `write a string with a unit, like "5s" or "250ms"`
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "want a duration, got %s; %s", describe(n), hint)
		return
	}
	dur, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil || n.ShortTag() != "!!str" {
		d.fail(n, path, "%s is not a duration; %s", n.Value, hint)
		return
	}
	v.SetInt(int64(dur))
}

// keysOf returns the yaml keys of struct type t, in order, and the index
// of the field of each: its yaml tag's name, else its name in lower case.
func keysOf(t reflect.Type) ([]string, map[string]int) {
	var names []string
	index := make(map[string]int)
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported() || name == "-":
			continue
		case name == "":
			name = strings.ToLower(f.Name)
		}
		names = append(names, name)
		index[name] = i
	}
	return names, index
}

// unknownKey says that key is not one of keys, suggesting the closest.
func unknownKey(key string, keys []string) string {
	if len(keys) == 0 {
		return fmt.Sprintf("unknown key %q; this takes no keys", key)
	}
	if s := suggest.Closest(key, keys); s != "" {
		return fmt.Sprintf("unknown key %q; did you mean %s?", key, s)
	}
	return fmt.Sprintf("unknown key %q; want one of %s", key, strings.Join(keys, ", "))
}

// want describes what a value of type t is written as.
func want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "a mapping"
}

// describe describes what n is, quoting a scalar (cut to 40 bytes).
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return fmt.Sprintf("%q", v)
}

// join is path.key.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
