package kafkacloser

import (
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults of Config.
const (
	DefaultValue   = ValueEvent
	DefaultTimeout = 10 * time.Second
)

// Values of Config.Value.
const (
	// ValueEvent makes the record value a JSON close command (see Command).
	ValueEvent = "event"
	// ValuePayload makes the record value the task payload, unchanged.
	ValuePayload = "payload"
)

// Config is the configuration of a kafka closer, decoded from the closers
// file:
//
//	kafka:
//	  topic: sms.reminders
//
// Zero fields take the defaults named on them (see WithDefaults); only Topic
// is required. The cluster is the canceller's (see New).
type Config struct {
	// Topic is the topic the close commands are produced to. It must exist:
	// the closer does not create topics. Required.
	Topic string `yaml:"topic"`
	// Value is the record value: "event", a JSON close command carrying
	// the task (see Command), or "payload", the task payload unchanged.
	// Default DefaultValue ("event").
	Value string `yaml:"value"`
	// Timeout bounds how long a close command may wait to be acknowledged
	// (the client's record delivery timeout); the close's context bounds it
	// too. Default DefaultTimeout (10s, the canceller's close timeout).
	Timeout time.Duration `yaml:"timeout"`
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Value == "" {
		c.Value = DefaultValue
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// Validate reports every problem with c, as closer.Problems, each message
// starting with the YAML key. It does not apply defaults: a zero field that
// has a default is reported, so call it after WithDefaults.
func (c Config) Validate() error {
	var p closer.Problems
	if c.Topic == "" {
		p.Add("topic", "required")
	} else if err := tiers.ValidTopic(c.Topic); err != nil {
		p.Add("topic", "%v", err)
	}
	switch c.Value {
	case ValueEvent, ValuePayload:
	default:
		p.Add("value", "%q: want %q or %q", c.Value, ValueEvent, ValuePayload)
	}
	if c.Timeout <= 0 {
		p.Add("timeout", "%v: must be positive", c.Timeout)
	}
	return p.Err()
}
