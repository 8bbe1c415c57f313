package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/hostile"
)

func TestDecompressor(t *testing.T) {
	const limit = 1 << 20
	small := bytes.Repeat([]byte("hourglass "), 1000)
	big := make([]byte, limit+1)
	zstdOf := func(b []byte, opts ...zstd.EOption) []byte {
		enc, _ := zstd.NewWriter(nil, opts...)
		defer enc.Close()
		return enc.EncodeAll(b, nil)
	}
	gzipOf := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	lz4Of := func(b []byte) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
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
		{"xerial over the cap", kgo.CodecSnappy, xerialOf(big[:limit/2], big[limit/2:]), nil},
		{"zstd corrupt", kgo.CodecZstd, corrupt(zstdOf(small)), nil},
		{"gzip corrupt", kgo.CodecGzip, corrupt(gzipOf(small)), nil},
		{"lz4 corrupt", kgo.CodecLz4, corrupt(lz4Of(small)), nil},
		{"snappy corrupt", kgo.CodecSnappy, corrupt(s2.EncodeSnappy(nil, small)), nil},
		{"xerial truncated", kgo.CodecSnappy, xerialOf(small)[:30], nil},
		{"unknown codec", kgo.CompressionCodecType(7), small, nil},
	}
	d := newDecompressor(limit, newDecodeBudget(2*limit, limit, time.Now))
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

// TestTinyRecordsBounded: a zstd batch of 300,000 empty records takes about
// 250 kB on the wire and 2.7 MB decompressed, far within the cap, but
// franz-go decodes each record into a kgo.Record of its own (160 bytes and a
// pointer): 50 MB held for one batch of one partition, and a batch within
// the broker's default 1 MiB takes 160 MB. The cap bounds what a batch
// takes once decoded, so the batch is refused (and skipped) like one that
// decompresses past it, and the records after it are read.
func TestTinyRecordsBounded(t *testing.T) {
	ctx := testCtx(t)
	topic := topicName(t, "tiny")
	if _, err := newAdmin(t, nil).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	seeds := kgo.SeedBrokers(cluster.ListenAddrs()...)
	prod, err := kgo.NewClient(seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := hostile.ZstdBomb(ctx, prod, topic, 0, nil, 300_000, 0); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(ReaderOpts(0), seeds,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var skipped, taken int
	for after := false; !after; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the record after the batch never came; took %d records of the batch, skipped %d batches", taken, skipped)
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if SkipBatch(cl, err) != nil {
				skipped++
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "after" {
				after = true
			} else {
				taken++
			}
		})
	}
	if skipped != 1 || taken != 0 {
		t.Errorf("took %d of the batch's 300000 records and skipped %d batches; want it skipped whole", taken, skipped)
	}
}
