package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestDecompressor(t *testing.T) {
	const max = 1 << 20
	small := bytes.Repeat([]byte("hourglass "), 1000)
	big := make([]byte, max+1)
	zstdOf := func(b []byte, opts ...zstd.EOption) []byte {
		enc, _ := zstd.NewWriter(nil, opts...)
		defer enc.Close()
		return enc.EncodeAll(b, nil)
	}
	gzipOf := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	lz4Of := func(b []byte) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	xerialOf := func(blocks ...[]byte) []byte {
		out := append([]byte{}, xerialPrefix...)
		out = append(out, 0, 0, 0, 1, 0, 0, 0, 1)
		for _, b := range blocks {
			enc := s2.EncodeSnappy(nil, b)
			out = binary.BigEndian.AppendUint32(out, uint32(len(enc)))
			out = append(out, enc...)
		}
		return out
	}
	corrupt := func(b []byte) []byte {
		c := bytes.Clone(b)
		for i := len(c) / 2; i < len(c); i++ {
			c[i] ^= 0x5a
		}
		return c
	}
	tests := []struct {
		name  string
		codec kgo.CompressionCodecType
		src   []byte
		want  []byte // nil: refused as ErrMaxDecompress
	}{
		{"none", kgo.CodecNone, small, small},
		{"zstd", kgo.CodecZstd, zstdOf(small), small},
		{"gzip", kgo.CodecGzip, gzipOf(small), small},
		{"lz4", kgo.CodecLz4, lz4Of(small), small},
		{"snappy", kgo.CodecSnappy, s2.EncodeSnappy(nil, small), small},
		{"xerial snappy", kgo.CodecSnappy, xerialOf(small[:5000], small[5000:]), small},
		{"zstd over the cap", kgo.CodecZstd, zstdOf(big), nil},
		// A frame of 4 MiB of zeros takes a few hundred bytes and declares
		// a window of 4 MiB: franz-go's bounded decoder refuses it with an
		// error that names no offsets.
		{"zstd window over the cap", kgo.CodecZstd, zstdOf(make([]byte, 4<<20)), nil},
		{"gzip over the cap", kgo.CodecGzip, gzipOf(big), nil},
		{"lz4 over the cap", kgo.CodecLz4, lz4Of(big), nil},
		{"snappy over the cap", kgo.CodecSnappy, s2.EncodeSnappy(nil, big), nil},
		{"xerial over the cap", kgo.CodecSnappy, xerialOf(big[:max/2], big[max/2:]), nil},
		{"zstd corrupt", kgo.CodecZstd, corrupt(zstdOf(small)), nil},
		{"gzip corrupt", kgo.CodecGzip, corrupt(gzipOf(small)), nil},
		{"lz4 corrupt", kgo.CodecLz4, corrupt(lz4Of(small)), nil},
		{"snappy corrupt", kgo.CodecSnappy, corrupt(s2.EncodeSnappy(nil, small)), nil},
		{"xerial truncated", kgo.CodecSnappy, xerialOf(small)[:30], nil},
		{"unknown codec", kgo.CompressionCodecType(7), small, nil},
	}
	d := newDecompressor(max)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.Decompress(tt.src, tt.codec)
			if tt.want == nil {
				if !errors.Is(err, kgo.ErrMaxDecompress) {
					t.Fatalf("Decompress = %d bytes, %v; want an error wrapping kgo.ErrMaxDecompress", len(got), err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("Decompress = %d bytes, %v; want the %d original bytes", len(got), err, len(tt.want))
			}
		})
	}
}
