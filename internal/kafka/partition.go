package kafka

import "github.com/twmb/franz-go/pkg/kgo"

// KeyPartition returns the partition, of n, that a record with key goes to
// in topic under the partitioner of every Hourglass producer: kgo's default,
// which for a keyed record is murmur2 of the key, as the Java client's
// (toPositive(murmur2(key)) % n). A producer with another partitioner
// (librdkafka's default, crc32) puts the key elsewhere: see the README's
// Python example, which sets murmur2_random.
func KeyPartition(topic string, key []byte, n int) int32 {
	if n <= 0 {
		return 0
	}
	return int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(&kgo.Record{Topic: topic, Key: key}, n))
}
