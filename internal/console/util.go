package console

import (
	"fmt"
	"strconv"
)

func itoa(n int) string { return strconv.Itoa(n) }

// where is topic[partition]@offset.
func where(topic string, partition int32, offset int64) string {
	return fmt.Sprintf("%s[%d]@%d", topic, partition, offset)
}
