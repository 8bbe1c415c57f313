package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// String implements flag.Value.
func (e *entry) String() string {
	if e == nil || e.val == nil {
		return ""
	}
	return e.val.String()
}

// Set implements flag.Value for command-line values, recording an error that
// names the flag for Parse to return.
func (e *entry) Set(s string) error {
	err := e.val.parse(s)
	if err != nil && e.f.flagErr == nil {
		e.f.flagErr = fmt.Errorf("--%s: %w", e.name, err)
	}
	return err
}

// IsBoolFlag lets the flag package accept a bool flag without a value.
func (e *entry) IsBoolFlag() bool {
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
		return fmt.Errorf("%q is not a boolean", s)
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string { return strconv.FormatBool(bool(*v)) }

type durationValue time.Duration

func (v *durationValue) parse(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a duration", s)
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
