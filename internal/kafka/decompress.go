package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// decompressor decompresses fetched record batches within max bytes, and
// reports every batch it cannot decompress, too large or malformed, as
// kgo.ErrMaxDecompress: franz-go then names the batch's offsets
// (*kgo.ErrDecompressTooLarge) and stops its partition until SkipBatch
// moves past it. franz-go's own bounded decompressor reports a zstd frame
// whose declared window is over the bound, or a corrupt batch, as a plain
// error instead, which stops the partition with no way past it: a producer
// could stop a partition for good with one such batch. A batch for which
// the client's budget has no room is not decoded (errDeferred).
type decompressor struct {
	max    int
	budget *decodeBudget
	plain  kgo.Decompressor // snappy, once its decoded length is checked
	zstd   sync.Pool
	gzip   sync.Pool
	lz4    sync.Pool
}

func newDecompressor(limit int, budget *decodeBudget) *decompressor {
	d := &decompressor{max: limit, budget: budget, plain: kgo.DefaultDecompressor()}
	d.zstd.New = func() any {
		dec, _ := zstd.NewReader(nil, zstd.WithDecoderLowmem(true), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderMaxWindow(uint64(limit)))
		return dec
	}
	d.gzip.New = func() any { return new(gzip.Reader) }
	d.lz4.New = func() any { return lz4.NewReader(nil) }
	return d
}

// Decompress implements kgo.Decompressor. The cap bounds what the batch
// takes once franz-go has decoded it, not only its bytes: every record
// becomes a kgo.Record of its own, so a batch of empty records, a few bytes
// each, would take some twenty times its decompressed size (a batch within
// the broker's default 1 MiB, 160 MB).
func (d *decompressor) Decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	if !d.budget.reserve() {
		return nil, errDeferred
	}
	out, err := d.decompress(src, codec)
	held := 0
	if err == nil {
		var cost int
		if cost, held = decodedCost(out); cost > d.max {
			out, err = nil, fmt.Errorf("%w: its records take %d bytes decoded", kgo.ErrMaxDecompress, cost)
		}
	}
	if err != nil {
		held = 0
		if !errors.Is(err, kgo.ErrMaxDecompress) {
			err = fmt.Errorf("%w: %w", kgo.ErrMaxDecompress, err)
		}
	}
	d.budget.settle(held)
	return out, err
}

// Memory franz-go takes for each decoded record besides the batch's bytes
// (which keys and values point into): the kgo.Record, its pointer in the
// fetch's records, and per header a kgo.RecordHeader and a copy of its name.
const (
	recordCost = int(unsafe.Sizeof(kgo.Record{})) + 8
	headerCost = int(unsafe.Sizeof(kgo.RecordHeader{}))
)

// decodedCost returns what the records of a decompressed v2 batch take
// once decoded, up to the first that does not read as one, where franz-go
// stops decoding too: cost, its bytes and the cost of each record, and
// held, the sum of heldBytes over its records (what the client's budget
// counts of them, without the bytes that frame them in the batch). A v0 or
// v1 message set (an offset's leading zero reads as a record too short)
// costs and holds its bytes.
func decodedCost(b []byte) (cost, held int) {
	cost = len(b)
	for records := 0; len(b) > 0; records++ {
		n, used := binary.Varint(b)
		// A record has at least its attributes, timestamp and offset
		// deltas, key and value lengths and header count.
		var r recordSize
		ok := used > 0 && n >= 6 && n <= int64(len(b)-used)
		if ok {
			r, ok = readRecord(b[used+1 : used+int(n)]) // past the attributes
		}
		if !ok {
			if records == 0 {
				held = len(b)
			}
			return cost, held
		}
		b = b[used+int(n):]
		cost += recordCost + r.headers*headerCost + r.names
		held += recordCost + r.headers*headerCost + r.payload
	}
	return cost, held
}

// recordSize is the size of a v2 record's parts: payload, its key, value,
// and header names and values; names, its header names alone; headers, how
// many headers it has.
type recordSize struct{ payload, names, headers int }

// readRecord reads a v2 record past its length and attributes.
func readRecord(rec []byte) (recordSize, bool) {
	var (
		size recordSize
		n    int
		ok   bool
	)
	for range 2 { // timestamp and offset deltas
		_, used := binary.Varint(rec)
		if used <= 0 {
			return size, false
		}
		rec = rec[used:]
	}
	for range 2 { // key and value
		if rec, n, ok = varintBytes(rec); !ok {
			return size, false
		}
		size.payload += n
	}
	nh, used := binary.Varint(rec)
	if used <= 0 || nh > int64(len(rec)) {
		return size, false
	}
	rec = rec[used:]
	for range max(nh, 0) {
		var name, value int
		if rec, name, ok = varintBytes(rec); !ok {
			return size, false
		}
		if rec, value, ok = varintBytes(rec); !ok {
			return size, false
		}
		size.payload += name + value
		size.names += name
		size.headers++
	}
	return size, true
}

// varintBytes skips a varint-length byte string (-1: null) at the start of
// b, returning the rest and the string's length.
func varintBytes(b []byte) ([]byte, int, bool) {
	n, used := binary.Varint(b)
	if used <= 0 || n < -1 || n > int64(len(b)-used) {
		return nil, 0, false
	}
	n = max(n, 0)
	return b[used+int(n):], int(n), true
}

func (d *decompressor) decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	switch codec {
	case kgo.CodecNone:
		return src, nil
	case kgo.CodecSnappy:
		if err := d.checkSnappy(src); err != nil {
			return nil, err
		}
		return d.plain.Decompress(src, codec)
	case kgo.CodecZstd:
		dec := d.zstd.Get().(*zstd.Decoder)
		defer d.zstd.Put(dec)
		return dec.DecodeAll(src, nil)
	case kgo.CodecGzip:
		r := d.gzip.Get().(*gzip.Reader)
		defer d.gzip.Put(r)
		if err := r.Reset(bytes.NewReader(src)); err != nil {
			return nil, err
		}
		return d.readBounded(r)
	case kgo.CodecLz4:
		r := d.lz4.Get().(*lz4.Reader)
		defer d.lz4.Put(r)
		r.Reset(bytes.NewReader(src))
		return d.readBounded(r)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// readBounded reads r whole, refusing more than max bytes.
func (d *decompressor) readBounded(r io.Reader) ([]byte, error) {
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(r, int64(d.max)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(d.max) {
		return nil, kgo.ErrMaxDecompress
	}
	return out.Bytes(), nil
}

// xerialPrefix starts a snappy batch in the framing of the Java client.
var xerialPrefix = []byte{130, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// checkSnappy checks what a snappy batch decodes to, from the lengths its
// blocks declare, without decoding it.
func (d *decompressor) checkSnappy(src []byte) error {
	if len(src) <= 16 || !bytes.HasPrefix(src, xerialPrefix) {
		n, err := s2.DecodedLen(src)
		if err == nil && n > d.max {
			err = kgo.ErrMaxDecompress
		}
		return err
	}
	total := 0
	for rem := src[16:]; len(rem) > 0; {
		if len(rem) < 4 {
			return errors.New("malformed xerial snappy framing")
		}
		size := int(binary.BigEndian.Uint32(rem))
		rem = rem[4:]
		if size < 0 || size > len(rem) {
			return errors.New("malformed xerial snappy framing")
		}
		n, err := s2.DecodedLen(rem[:size])
		if err != nil {
			return err
		}
		if total += n; total > d.max {
			return kgo.ErrMaxDecompress
		}
		rem = rem[size:]
	}
	return nil
}
