package cancels

import (
	"encoding/binary"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// The keys and values of the store, in the layout store.go describes
// ("Key layout").

// cancelKey appends the key of the cancellation of task id to dst.
func cancelKey(dst []byte, id string) []byte {
	return append(append(dst, prefixCancel), id...)
}

// expiryKey appends the expiry index key of task id expiring at ms to dst.
func expiryKey(dst []byte, ms int64, id string) []byte {
	dst = append(dst, prefixExpiry)
	dst = binary.BigEndian.AppendUint64(dst, uint64(ms)^(1<<63))
	return append(dst, id...)
}

// offsetKey is the key of the next offset of a partition.
func offsetKey(partition int32) []byte {
	return binary.BigEndian.AppendUint32([]byte{prefixOffset}, uint32(partition))
}

// flagDue marks a value that holds a due time.
const flagDue = 1

// appendValue appends the value of a cancellation to dst: a flags byte,
// then varints: At (unix ms), Due-At when Due is set, expires-At. Most values
// take 10 to 13 bytes.
func appendValue(dst []byte, c tiers.Cancellation, expires time.Time) []byte {
	at, flags := c.At.UnixMilli(), byte(0)
	if !c.Due.IsZero() {
		flags = flagDue
	}
	dst = binary.AppendVarint(append(dst, flags), at)
	if flags&flagDue != 0 {
		dst = binary.AppendVarint(dst, c.Due.UnixMilli()-at)
	}
	return binary.AppendVarint(dst, expires.UnixMilli()-at)
}

// decodeValue reads a value written by appendValue: the cancellation
// (without its ID) and its expiry (unix ms).
func decodeValue(v []byte) (c tiers.Cancellation, expires int64, err error) {
	if len(v) == 0 || v[0]&^flagDue != 0 {
		return c, 0, errCorrupt
	}
	flags, v := v[0], v[1:]
	at, ok := readVarint(&v)
	c.At = time.UnixMilli(at)
	if flags&flagDue != 0 {
		due, okDue := readVarint(&v)
		c.Due, ok = time.UnixMilli(at+due), ok && okDue
	}
	exp, okExp := readVarint(&v)
	if !ok || !okExp || len(v) != 0 {
		return tiers.Cancellation{}, 0, errCorrupt
	}
	return c, at + exp, nil
}

// readVarint reads a varint from the front of *v and advances it.
func readVarint(v *[]byte) (int64, bool) {
	x, n := binary.Varint(*v)
	if n <= 0 {
		return 0, false
	}
	*v = (*v)[n:]
	return x, true
}
