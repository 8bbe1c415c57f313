package consumer

import (
	"encoding/base64"
	"errors"
	"math/bits"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A partition's commit stops at its first record not done, and a record
// held for long (a deadline in the router's in-memory timer waits up to the
// smallest tier: a minute by default) holds it there while the records
// after it are done. A crash then repeats all of those: the next owner
// reads from the commit, forwards every one again and only then reaches
// the records that are due. So every commit also records, in its metadata,
// which offsets above it are done, and the next owner skips those
// (Mark.Handled).
//
// The metadata is "hg1:<committed offset>:<bits>", bits the base64
// (URL alphabet, unpadded) of a bit set, least significant bit first, whose
// bit i says that offset committed+1+i is done. It covers at most
// maxHandledBits offsets: Kafka bounds a commit's metadata
// (offset.metadata.max.bytes, 4,096 bytes by default), and the records
// after those are read again as before.

// handledPrefix starts the metadata of a commit that records done offsets.
const handledPrefix = "hg1:"

// maxHandledBits bounds the offsets one commit's metadata covers: 2,200
// bytes of bits, under 3,000 characters with the prefix.
const maxHandledBits = 2200 * 8

// handledMeta returns the metadata of a commit of t's watermark: the done
// offsets above it, up to the last one and at most maxBits of them; "" when
// there are none (every offset above the watermark is pending, or none is
// taken).
func (t *tracker) handledMeta(maxBits int) string {
	w, ok := t.Watermark()
	if !ok || t.n == 0 || maxBits <= 0 {
		return ""
	}
	// Offsets w+1 ... next-1; a set bit of t.words is a pending offset.
	// Offsets past t.words are not pending: Skip moved next over records
	// the consumer skipped.
	n := min(int(t.next-w-1), maxBits)
	set := make([]byte, (n+7)/8)
	last := -1 // the last done offset's index
	for i := 0; i < n; {
		off := w + 1 + int64(i)
		d := off - t.base
		var word uint64 // pending bits from off
		if k := t.head + int(d/64); k < len(t.words) {
			word = t.words[k] >> (d % 64)
		}
		span := min(64-int(d%64), n-i)
		done := ^word
		if span < 64 {
			done &= 1<<span - 1
		}
		for done != 0 {
			j := bits.TrailingZeros64(done)
			set[(i+j)/8] |= 1 << ((i + j) % 8)
			last = i + j
			done &= done - 1
		}
		i += span
	}
	if last < 0 {
		return ""
	}
	return handledPrefix + strconv.FormatInt(w, 10) + ":" + base64.RawURLEncoding.EncodeToString(set[:last/8+1])
}

// handled is the done offsets above a partition's committed offset, as the
// commit's metadata recorded them: offset from+i is done when bit i of set
// is.
type handled struct {
	from int64
	set  []byte
}

// parseHandled returns the done offsets that meta, the metadata of a commit
// of offset committed, records, and false when it records none: metadata
// of another writer (franz-go's default is the member id), of another
// committed offset (the offsets were reset since), or malformed.
func parseHandled(meta string, committed int64) (handled, bool) {
	rest, ok := strings.CutPrefix(meta, handledPrefix)
	if !ok {
		return handled{}, false
	}
	at, b64, ok := strings.Cut(rest, ":")
	if !ok {
		return handled{}, false
	}
	w, err := strconv.ParseInt(at, 10, 64)
	if err != nil || w != committed || w < 0 || len(b64) > base64.RawURLEncoding.EncodedLen(maxHandledBits/8) {
		return handled{}, false
	}
	set, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil || len(set) == 0 {
		return handled{}, false
	}
	return handled{from: w + 1, set: set}, true
}

// has reports whether offset is recorded as done.
func (h handled) has(offset int64) bool {
	i := offset - h.from
	return i >= 0 && i < int64(len(h.set))*8 && h.set[i/8]&(1<<(i%8)) != 0
}

// past reports whether offset is past every offset h records: h is of no
// more use from there on.
func (h handled) past(offset int64) bool { return offset-h.from >= int64(len(h.set))*8 }

// fetched notes the done offsets that the commits of the partitions just
// assigned record (the group fetched their offsets; kgo calls this before
// it reads them), for take to skip.
func (m *Member) fetched(resp *kmsg.OffsetFetchResponse) {
	topics := resp.Topics
	for _, g := range resp.Groups { // v8 and later: one entry per group
		if g.Group == m.cfg.Group.Name {
			topics = nil
			for _, t := range g.Topics {
				ps := make([]kmsg.OffsetFetchResponseTopicPartition, 0, len(t.Partitions))
				for _, p := range t.Partitions {
					ps = append(ps, kmsg.OffsetFetchResponseTopicPartition{Partition: p.Partition, Offset: p.Offset, Metadata: p.Metadata, ErrorCode: p.ErrorCode})
				}
				topics = append(topics, kmsg.OffsetFetchResponseTopic{Topic: t.Topic, Partitions: ps})
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts, offsets int
	for _, t := range topics {
		for _, p := range t.Partitions {
			k := tp{t.Topic, p.Partition}
			delete(m.assigned, k)
			if p.ErrorCode != 0 || p.Metadata == nil || p.Offset < 0 {
				continue
			}
			h, ok := parseHandled(*p.Metadata, p.Offset)
			if !ok {
				continue
			}
			m.assigned[k] = h
			parts++
			for _, b := range h.set {
				offsets += bits.OnesCount8(b)
			}
		}
	}
	if parts > 0 {
		m.log.Info("records above the commits were done before the assignment; they are skipped, not repeated",
			"group", m.cfg.Group.Name, "partitions", parts, "records", offsets)
	}
}

// metadataRefused stops recording done offsets in commits once the
// brokers refused a commit's metadata as too large (a cluster whose
// offset.metadata.max.bytes is below the 3,000 bytes a commit may write):
// the commits go on without it, and a crash repeats what they would have
// recorded. It reports whether err was that refusal, the first one.
func (m *Member) metadataRefused(err error) bool {
	if !errors.Is(err, kerr.OffsetMetadataTooLarge) || m.metaBits.Swap(0) == 0 {
		return false
	}
	m.log.Warn("the brokers refuse the done offsets in commit metadata as too large (offset.metadata.max.bytes); committing without them, so a crash or a rebalance repeats more",
		"group", m.cfg.Group.Name)
	return true
}
