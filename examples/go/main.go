// Command go schedules a deadline with franz-go and pkg/tiers:
// go run ./examples/go [ID [DELAY_SECONDS]] (default order-42, 1800).
package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/pkg/tiers"
)

func main() {
	id, delay := "order-42", 30*time.Minute
	if len(os.Args) > 1 {
		id = os.Args[1]
	}
	if len(os.Args) > 2 {
		s, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "usage: go [ID [DELAY_SECONDS]]")
			os.Exit(2)
		}
		delay = time.Duration(s) * time.Second
	}
	if err := schedule(id, delay); err != nil {
		fmt.Fprintf(os.Stderr, "schedule %s: %v\n", id, err)
		os.Exit(1)
	}
}

func schedule(id string, delay time.Duration) error {
	table := tiers.DefaultTable() // the router's --tiers
	if s := os.Getenv("HOURGLASS_TIERS"); s != "" {
		t, err := tiers.Parse(s)
		if err != nil {
			return err
		}
		table = t
	}
	prefix := cmp.Or(os.Getenv("HOURGLASS_TOPIC_PREFIX"), tiers.DefaultPrefix) // the router's --topic-prefix
	brokers := strings.Split(cmp.Or(os.Getenv("HOURGLASS_BROKERS"), "127.0.0.1:9092"), ",")

	client, err := kgo.NewClient(kgo.SeedBrokers(brokers...)) // partitions by murmur2 of the key
	if err != nil {
		return err
	}
	defer client.Close()
	s, err := tiers.NewScheduler(client, table, tiers.WithPrefix(prefix))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// Schedule picks the tier topic and waits for the broker's acknowledgement.
	return s.Schedule(ctx, tiers.Task{
		ID:      id,
		Due:     time.Now().Add(delay),
		Payload: fmt.Appendf(nil, `{"order":%q}`, id),
		Kind:    "order-timeout", // optional
	})
}
