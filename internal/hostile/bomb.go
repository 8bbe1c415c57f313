package hostile

import (
	"context"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ZstdBomb produces, with a raw produce request on cl, one zstd-compressed
// record batch of n records, each with key and a value of size zero bytes,
// to topic's partition: a batch of a few kilobytes on the wire that
// decompresses to about n*size bytes. It is how a hostile producer tries to
// exhaust a consumer's memory, and no kgo producer builds such a batch (kgo
// bounds batches before compression).
func ZstdBomb(ctx context.Context, cl *kgo.Client, topic string, partition int32, key []byte, n, size int) error {
	value := make([]byte, size)
	batch, err := zstdBatch(n, time.Now().UnixMilli(), func(int) kmsg.Record { return kmsg.Record{Key: key, Value: value} })
	if err != nil {
		return err
	}
	return ProduceBatch(ctx, cl, topic, partition, batch)
}

// ZstdBatch returns recs (their keys, values, headers and timestamps: now
// if the first has none) as one zstd-compressed record batch, whatever
// their size, for ProduceBatch: kgo's producer would split them, and refuse
// a batch over about 1 MB before compression.
func ZstdBatch(recs []kgo.Record) ([]byte, error) {
	first := time.Now()
	if len(recs) > 0 && !recs[0].Timestamp.IsZero() {
		first = recs[0].Timestamp
	}
	return zstdBatch(len(recs), first.UnixMilli(), func(i int) kmsg.Record {
		r := kmsg.Record{Key: recs[i].Key, Value: recs[i].Value}
		if ts := recs[i].Timestamp; !ts.IsZero() {
			r.TimestampDelta64 = ts.Sub(first).Milliseconds()
		}
		for _, h := range recs[i].Headers {
			r.Headers = append(r.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		return r
	})
}

// zstdBatch returns the n records rec returns as one zstd batch stamped
// first (unix milliseconds).
func zstdBatch(n int, first int64, rec func(int) kmsg.Record) ([]byte, error) {
	var raw []byte
	last := first
	for i := range n {
		r := rec(i)
		r.OffsetDelta = int32(i)
		last = max(last, first+r.TimestampDelta64)
		body := r.AppendTo(nil) // with Length 0, a one-byte varint
		r.Length = int32(len(body) - 1)
		raw = r.AppendTo(raw)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return nil, err
	}
	compressed := enc.EncodeAll(raw, nil)
	enc.Close()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: 4, // zstd
		LastOffsetDelta: int32(n - 1), FirstTimestamp: first, MaxTimestamp: last,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(n), Records: compressed,
	}
	return encode(&b), nil
}

// Restamp returns the record batch batch with its records stamped from ts
// on (their deltas kept): a batch built ahead, whose compression takes
// long, can then be sent as if made now.
func Restamp(batch []byte, ts time.Time) ([]byte, error) {
	var b kmsg.RecordBatch
	if err := b.ReadFrom(batch); err != nil {
		return nil, err
	}
	b.MaxTimestamp += ts.UnixMilli() - b.FirstTimestamp
	b.FirstTimestamp = ts.UnixMilli()
	return encode(&b), nil
}

// encode returns b with its length and checksum set.
func encode(b *kmsg.RecordBatch) []byte {
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	b.CRC = int32(crc32.Checksum(b.AppendTo(nil)[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}

// ProduceBatch produces the encoded record batch batch to topic's
// partition, with a raw produce request on cl to the partition's leader.
func ProduceBatch(ctx context.Context, cl *kgo.Client, topic string, partition int32, batch []byte) error {
	// Produce v13 names topics by id.
	topics, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return err
	}
	detail, ok := topics[topic]
	if !ok || detail.Err != nil {
		return fmt.Errorf("topic %s: %w", topic, detail.Err)
	}
	leader, ok := detail.Partitions[partition]
	if !ok || leader.Err != nil {
		return fmt.Errorf("topic %s partition %d: %w", topic, partition, leader.Err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, detail.ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(leader.Leader)))
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("produce %s[%d]: %w", topic, partition, err)
			}
		}
	}
	return nil
}
