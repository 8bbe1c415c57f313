package kafka

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// franz-go never adopts the new id of a topic deleted and created again
// under a running client: its produces to the topic fail with
// UNKNOWN_TOPIC_ID, and its fetches of it too, until the topic is purged
// from the client. A service would retry them forever without getting
// anywhere.

// Recreated reports whether err says that a topic was deleted and created
// again under the client (UNKNOWN_TOPIC_ID), or that a record was failed
// by the purge that follows one (see Repurger).
func Recreated(err error) bool {
	return errors.Is(err, kerr.UnknownTopicID) || err != nil && err.Error() == purgedMessage
}

// purgedMessage is the error franz-go fails a record with when its topic is
// purged from the client while the record is buffered (not exported).
const purgedMessage = "topic purged while buffered"

// RecreatedConsumed is the error that stops a service whose consumed topic
// was deleted and created again: its client keeps reading the old topic's
// id, and a restart reads the new topic.
func RecreatedConsumed(topic string, err error) error {
	return fmt.Errorf("topic %s was deleted and created again under this service, which keeps reading the old topic: restart it to read the new one: %w", topic, err)
}

// Repurger purges topics created again from a client's producer, so that
// the produces tried again after Recreated errors load the new topic's id;
// at most once a second per topic.
type Repurger struct {
	cl   *kgo.Client
	log  *slog.Logger
	mu   sync.Mutex
	last map[string]time.Time
}

// NewRepurger returns a Repurger of cl, which logs each purge to log.
func NewRepurger(cl *kgo.Client, log *slog.Logger) *Repurger {
	return &Repurger{cl: cl, log: log, last: make(map[string]time.Time)}
}

// Purge purges topic from the client's producer, unless it did within the
// last second.
func (p *Repurger) Purge(topic string) {
	p.mu.Lock()
	now := time.Now()
	if now.Sub(p.last[topic]) < time.Second {
		p.mu.Unlock()
		return
	}
	p.last[topic] = now
	if len(p.last) > 1024 {
		clear(p.last)
		p.last[topic] = now
	}
	p.mu.Unlock()
	p.cl.PurgeTopicsFromProducing(topic)
	p.log.Warn("topic deleted and created again; producing to the new topic", "to", topic)
}
