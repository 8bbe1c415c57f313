package cli

import (
	"fmt"
	"math"
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
	d, err := ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a duration; want a number with a unit, like 5s, 250ms or 1m30s", s)
	}
	*v = durationValue(d)
	return nil
}
func (v *durationValue) String() string { return time.Duration(*v).String() }

// bytesValue is an int flag that counts bytes: it takes an integer or a
// size in KiB, MiB or GiB (32MiB, 32 MiB), as its default is shown.
type bytesValue int

func (v *bytesValue) parse(s string) error {
	n, err := ParseBytes(s)
	if err != nil {
		return fmt.Errorf("%q is not an integer; want bytes, like 4194304 or 4MiB", s)
	}
	*v = bytesValue(n)
	return nil
}
func (v *bytesValue) String() string { return strconv.Itoa(int(*v)) }

// byteUnits are the units of ParseBytes and FormatBytes, largest first.
var byteUnits = []struct {
	name string
	size int
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// ParseBytes parses a byte count: an integer (4194304), or a whole number of
// KiB, MiB or GiB, with or without a space (4MiB, 4 MiB), case aside.
func ParseBytes(s string) (int, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	for _, u := range byteUnits {
		if len(s) > len(u.name) && strings.EqualFold(s[len(s)-len(u.name):], u.name) {
			n, err := strconv.Atoi(strings.TrimSpace(s[:len(s)-len(u.name)]))
			if err != nil || n > math.MaxInt/u.size || n < math.MinInt/u.size {
				return 0, fmt.Errorf("%q is not a byte count", s)
			}
			return n * u.size, nil
		}
	}
	return 0, fmt.Errorf("%q is not a byte count", s)
}

// FormatBytes formats a byte count in the largest unit that divides it:
// 32 MiB, 4 KiB, 900000.
func FormatBytes(n int) string {
	for _, u := range byteUnits {
		if n != 0 && n%u.size == 0 {
			return strconv.Itoa(n/u.size) + " " + u.name
		}
	}
	return strconv.Itoa(n)
}

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
