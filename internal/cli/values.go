package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// isBool reports whether e is a bool flag, which takes no value on the
// command line.
func (e *entry) isBool() bool {
	_, ok := e.val.(*boolValue)
	return ok
}

type stringValue string

func (v *stringValue) parse(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string       { return string(*v) }

type intValue int

func (v *intValue) parse(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

type floatValue float64

func (v *floatValue) parse(s string) error {
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	*v = floatValue(n)
	return nil
}
func (v *floatValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }

type boolValue bool

func (v *boolValue) parse(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a boolean; want true or false", s)
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string { return strconv.FormatBool(bool(*v)) }

type durationValue time.Duration

func (v *durationValue) parse(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a duration; want a number with a unit, like 5s, 250ms or 1m30s", s)
	}
	*v = durationValue(d)
	return nil
}
func (v *durationValue) String() string { return time.Duration(*v).String() }

type stringsValue struct {
	p   *[]string
	set bool // a command-line use has replaced the default
}

func (v *stringsValue) parse(s string) error {
	items := SplitList(s)
	if v.set {
		*v.p = append(*v.p, items...)
	} else {
		*v.p = items
		v.set = true
	}
	return nil
}
func (v *stringsValue) String() string { return strings.Join(*v.p, ",") }

// SplitList splits a comma-separated list, trims spaces from each item and
// drops empty items. It returns a non-nil, possibly empty, slice.
func SplitList(s string) []string {
	out := []string{}
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
