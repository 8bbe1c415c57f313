package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

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
// could stop a partition for good with one such batch.
type decompressor struct {
	max   int
	plain kgo.Decompressor // snappy, once its decoded length is checked
	zstd  sync.Pool
	gzip  sync.Pool
	lz4   sync.Pool
}

func newDecompressor(max int) *decompressor {
	d := &decompressor{max: max, plain: kgo.DefaultDecompressor()}
	d.zstd.New = func() any {
		dec, _ := zstd.NewReader(nil, zstd.WithDecoderLowmem(true), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(max)), zstd.WithDecoderMaxWindow(uint64(max)))
		return dec
	}
	d.gzip.New = func() any { return new(gzip.Reader) }
	d.lz4.New = func() any { return lz4.NewReader(nil) }
	return d
}

// Decompress implements kgo.Decompressor.
func (d *decompressor) Decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	out, err := d.decompress(src, codec)
	if err != nil && !errors.Is(err, kgo.ErrMaxDecompress) {
		err = fmt.Errorf("%w: %w", kgo.ErrMaxDecompress, err)
	}
	return out, err
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
