// Package headers builds and compares Kafka record headers in tests.
package headers

import (
	"bytes"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Of builds record headers from key, value pairs.
func Of(kv ...string) []kgo.RecordHeader {
	if len(kv)%2 != 0 {
		panic("headers.Of: odd number of arguments")
	}
	var out []kgo.RecordHeader
	for i := 0; i < len(kv); i += 2 {
		out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}

// String formats headers for failure messages: key=value, space-separated.
func String(hs []kgo.RecordHeader) string {
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(h.Key + "=" + string(h.Value))
	}
	return b.String()
}

// Equal reports whether a and b hold the same headers in the same order.
func Equal(a, b []kgo.RecordHeader) bool {
	return slices.EqualFunc(a, b, func(x, y kgo.RecordHeader) bool {
		return x.Key == y.Key && bytes.Equal(x.Value, y.Value)
	})
}
