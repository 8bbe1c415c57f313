package cli

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// day is the unit d of [ParseDuration] and [FormatDuration]: 24 hours, as
// deadlines count days, whatever the calendar's daylight saving does.
const day = 24 * time.Hour

// ParseDuration parses a duration as time.ParseDuration does (500ms, 1m30s,
// 36h, -5s), and also with days, the unit d of 24 hours: 7d, 1.5d, 1d12h.
// A sign applies to the whole duration, as with time.ParseDuration; whether
// a negative duration makes sense is the caller's to say.
func ParseDuration(s string) (time.Duration, error) {
	if !strings.Contains(s, "d") {
		return time.ParseDuration(s)
	}
	rest, neg := s, false
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		neg, rest = rest[0] == '-', rest[1:]
	}
	if rest == "" {
		return 0, errors.New("time: invalid duration " + strconv.Quote(s))
	}
	var total time.Duration
	for rest != "" {
		n := strings.IndexFunc(rest, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
		if n <= 0 {
			return 0, errors.New("time: invalid duration " + strconv.Quote(s))
		}
		u := strings.IndexFunc(rest[n:], func(r rune) bool { return r == '.' || (r >= '0' && r <= '9') })
		if u < 0 {
			u = len(rest) - n
		}
		num, unit := rest[:n], rest[n:n+u]
		rest = rest[n+u:]
		var d time.Duration
		var err error
		if unit == "d" {
			// Days are hours times 24: 1.5d is exactly 36h.
			d, err = time.ParseDuration(num + "h")
			if err == nil && d > math.MaxInt64/24 {
				err = errors.New("time: invalid duration " + strconv.Quote(s))
			}
			d *= 24
		} else {
			d, err = time.ParseDuration(num + unit)
		}
		if err != nil {
			return 0, errors.New("time: invalid duration " + strconv.Quote(s))
		}
		if total > math.MaxInt64-d {
			return 0, errors.New("time: invalid duration " + strconv.Quote(s))
		}
		total += d
	}
	if neg {
		total = -total
	}
	return total, nil
}

// FormatDuration formats d compactly, in the units [ParseDuration] reads:
// whole days as d, and no zero units: 365d, 1d12h, 1h, 1m30s, 5ms, 0s.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	if d < 0 {
		if d == math.MinInt64 {
			return d.String()
		}
		return "-" + FormatDuration(-d)
	}
	var s string
	if days := d / day; days > 0 {
		s = strconv.FormatInt(int64(days), 10) + "d"
		d -= days * day
		if d == 0 {
			return s
		}
	}
	// time.Duration.String writes every unit below the largest: 1h0m0s,
	// 1m0s, 1h0m5s.
	t := d.String()
	if strings.HasSuffix(t, "m0s") {
		t = t[:len(t)-2]
	}
	if strings.HasSuffix(t, "h0m") {
		t = t[:len(t)-2]
	}
	t = strings.Replace(t, "h0m", "h", 1)
	return s + t
}
