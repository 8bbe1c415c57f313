package kafkacloser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// HeaderIdempotencyKey is the record header "hourglass:<kind>:<id>": the
// same for every attempt and every duplicate delivery of a task, so that a
// consumer can drop a repeated command. The other headers of a close
// command are tiers.HeaderKind, tiers.HeaderDue and tiers.HeaderAttempt.
const HeaderIdempotencyKey = "hourglass-idempotency-key"

// CommandVersion is the version of Command this package writes.
const CommandVersion = 1

// Command is the record value of a close command with value "event", JSON
// encoded:
//
//	{"v":1,"command":"close","task_id":"42","kind":"reminder","due_ms":1767225600000,"attempt":1,"payload":{"phone":"..."}}
//
// Payload holds the task payload when it is valid JSON; otherwise
// PayloadBase64 holds it (standard base64). An empty payload sets neither.
type Command struct {
	V             int             `json:"v"`       // CommandVersion
	Command       string          `json:"command"` // "close"
	TaskID        string          `json:"task_id"`
	Kind          string          `json:"kind"`
	DueMs         int64           `json:"due_ms"` // unix milliseconds; 0 when unknown
	Attempt       int             `json:"attempt"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	PayloadBase64 []byte          `json:"payload_base64,omitempty"`
}

// permanentErrs are the produce errors that no retry can cure: the record
// is too large for the topic, or the topic name is refused.
var permanentErrs = []error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidTopicException, kerr.InvalidRecord}

// Closer closes a task by producing a close command to a topic; see the
// package documentation. It is safe for concurrent use. Create it with New.
type Closer struct {
	cfg    Config
	client *kgo.Client

	stopOnce sync.Once
	stopErr  error
}

var (
	_ closer.Closer  = (*Closer)(nil)
	_ closer.Stopper = (*Closer)(nil)
)

// New returns the closer cfg describes, after applying its defaults. base
// are the connection options of the canceller's cluster (seed brokers, TLS,
// SASL); they must not configure consuming. New adds its producer options
// after them: acks from all in-sync replicas, no linger and a record
// delivery timeout of cfg.Timeout. Writes are idempotent (franz-go's
// default). New does not connect: an unreachable cluster shows in Close.
func New(cfg Config, base []kgo.Opt) (*Closer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kafka closer: %w", err)
	}
	cl, err := kgo.NewClient(slices.Concat(base, []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Closes ready at the same moment share a produce request without
		// waiting for each other: a close is sent at once when a request
		// slot is free (kgo keeps up to 5 in flight per broker), and the
		// closes that come while all are taken go out together in the
		// next (see TestConcurrentCloses). A linger would only delay
		// the lone close; ProduceSync skips it anyway.
		kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(cfg.Timeout),
	})...)
	if err != nil {
		return nil, fmt.Errorf("kafka closer: topic %s: %w", cfg.Topic, err)
	}
	return &Closer{cfg: cfg, client: cl}, nil
}

// Batches reports true: the commands produced at the same moment share a
// produce request (closer.Batcher).
func (c *Closer) Batches() bool { return true }

// Close produces the close command of t and waits for it to be
// acknowledged: it is Closed, with the detail "topic[partition]@offset",
// once the command is durably in the topic. Errors are retryable, except
// for a record too large and an invalid topic, which are closer.Permanent.
func (c *Closer) Close(ctx context.Context, t closer.Task) (closer.Result, error) {
	where := fmt.Sprintf("kafka close task %q: produce to %s", t.ID, c.cfg.Topic)
	if t.ID == "" {
		return closer.Result{}, closer.Permanent(fmt.Errorf("%s: the task has no id", where))
	}
	r, err := c.record(t)
	if err != nil {
		return closer.Result{}, closer.Permanent(fmt.Errorf("%s: %w", where, err))
	}
	pctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	r, err = c.client.ProduceSync(pctx, r).First()
	if err != nil {
		err = fmt.Errorf("%s: %w", where, err)
		for _, p := range permanentErrs {
			if errors.Is(err, p) {
				return closer.Result{}, closer.Permanent(err)
			}
		}
		return closer.Result{}, err
	}
	return closer.Result{Outcome: outcome.Closed, Detail: fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)}, nil
}

// record returns the close command of t.
func (c *Closer) record(t closer.Task) (*kgo.Record, error) {
	var due int64
	if !t.Meta.Due.IsZero() {
		due = t.Meta.Due.UnixMilli()
	}
	headers := make([]kgo.RecordHeader, 0, 4)
	if t.Kind != "" {
		headers = append(headers, kgo.RecordHeader{Key: tiers.HeaderKind, Value: []byte(t.Kind)})
	}
	if due != 0 {
		headers = append(headers, kgo.RecordHeader{Key: tiers.HeaderDue, Value: strconv.AppendInt(nil, due, 10)})
	}
	headers = append(headers,
		kgo.RecordHeader{Key: tiers.HeaderAttempt, Value: strconv.AppendInt(nil, int64(t.Attempt), 10)},
		kgo.RecordHeader{Key: HeaderIdempotencyKey, Value: []byte("hourglass:" + t.Kind + ":" + t.ID)},
	)
	value := t.Payload
	if c.cfg.Value == ValueEvent {
		cmd := Command{V: CommandVersion, Command: "close", TaskID: t.ID, Kind: t.Kind, DueMs: due, Attempt: t.Attempt}
		switch {
		case len(t.Payload) == 0:
		case json.Valid(t.Payload):
			cmd.Payload = t.Payload
		default:
			cmd.PayloadBase64 = t.Payload
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // the payload stays as it was, apart from whitespace
		if err := enc.Encode(cmd); err != nil {
			return nil, fmt.Errorf("encode the close command: %w", err)
		}
		value = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	return &kgo.Record{Topic: c.cfg.Topic, Key: []byte(t.ID), Value: value, Headers: headers}, nil
}

// Stop flushes what is buffered, for at most Config.Timeout, and closes the
// client. Only the first call does anything; later calls return its error.
func (c *Closer) Stop() error {
	c.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
		defer cancel()
		if err := c.client.Flush(ctx); err != nil {
			c.stopErr = fmt.Errorf("kafka closer: flush to %s: %w", c.cfg.Topic, err)
		}
		c.client.Close()
	})
	return c.stopErr
}
