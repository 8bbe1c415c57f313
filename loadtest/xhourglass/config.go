package xhourglass

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/loadtest/workload"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults of ProducerConfig.
const (
	DefaultMaxInFlight     = 10_000
	DefaultDeliveryTimeout = 30 * time.Second
	DefaultClientID        = "hourglass-k6"
	DefaultStoreTimeout    = 5 * time.Second
	DefaultOutcomeWait     = 30 * time.Second
	maxOutcomeWait         = time.Hour
	maxMaxInFlight         = 1_000_000
	maxRunIDLen            = 64
)

// ProducerConfig is the argument of `new hourglass.Producer({...})`. Keys
// are the JSON names; a key the config does not know is an error.
type ProducerConfig struct {
	// Brokers are the seed brokers, "host:port,host:port" or a list.
	// Default "127.0.0.1:9092".
	Brokers StringList `json:"brokers"`
	// Prefix is the topic prefix. Default "hourglass.".
	Prefix string `json:"prefix"`
	// Tiers are the router's delay tiers, "1s,2s,5s,10s". Default
	// tiers.DefaultTiers, the router's default; the delay topic of each
	// must exist.
	Tiers string `json:"tiers"`
	// Kind is the hourglass-kind of tasks that name none. Default ""
	// (the canceller's default kind).
	Kind string `json:"kind"`
	// Manifest is the file the acknowledged tasks are recorded in.
	// Default "hourglass-manifest-<runId>.jsonl" in the working directory.
	Manifest string `json:"manifest"`
	// StoreURL is the order store's base URL (`hourglass demo
	// --store-addr`); a paid task is paid with PUT <storeUrl>/orders/<id>
	// before it is produced. Default "": paid tasks are refused.
	StoreURL string `json:"storeUrl"`
	// StoreTimeout bounds one store request. Default 5s.
	StoreTimeout Duration `json:"storeTimeout"`
	// MaxInFlight bounds the tasks produced and not yet acknowledged;
	// schedule() waits when it is reached. Default 10000.
	MaxInFlight int `json:"maxInFlight"`
	// DeliveryTimeout bounds how long one record may take to be
	// acknowledged, retries included, before it counts as an error.
	// Default 30s.
	DeliveryTimeout Duration `json:"deliveryTimeout"`
	// Linger is how long the client waits to batch records for a
	// partition. Default (absent): kgo's, 10ms; 0 sends at once.
	Linger *Duration `json:"linger"`
	// RunID tells this run's task ids from every other run's: every id
	// starts with "lt-<runId>-". Default: one id per k6 process, from the
	// time and a random number; scripts pass RUN_ID.
	RunID string `json:"runId"`
	// Outcomes reads the outcomes topic during the run and judges every
	// task by its first final outcome: the close lateness, early and
	// wrong outcomes as they come, and at close() the tasks lost. Default
	// true; false when the test may not read the outcomes topic.
	Outcomes *bool `json:"outcomes"`
	// OutcomesTopic is the topic the canceller writes its outcome events
	// to. Default "<prefix>outcomes".
	OutcomesTopic string `json:"outcomesTopic"`
	// OutcomeWait is how long past the last due time close() waits for
	// the tasks without a final outcome before it counts them lost.
	// Default 30s.
	OutcomeWait Duration `json:"outcomeWait"`
	// ClientID is the Kafka client id. Default "hourglass-k6".
	ClientID string `json:"clientId"`
	// TLS connects with TLS. Default: off.
	TLS *TLSConfig `json:"tls"`
	// SASL authenticates with SASL. Default: none.
	SASL *SASLConfig `json:"sasl"`
}

// TLSConfig is ProducerConfig.TLS; it is enabled by any field set.
type TLSConfig struct {
	Enabled            bool   `json:"enabled"`
	CAFile             string `json:"caFile"`
	CertFile           string `json:"certFile"`
	KeyFile            string `json:"keyFile"`
	ServerName         string `json:"serverName"`
	InsecureSkipVerify bool   `json:"insecureSkipVerify"`
}

// SASLConfig is ProducerConfig.SASL.
type SASLConfig struct {
	// Mechanism is plain, scram-sha-256 or scram-sha-512.
	Mechanism    string `json:"mechanism"`
	User         string `json:"user"`
	Password     string `json:"password"`
	PasswordFile string `json:"passwordFile"`
}

// WithDefaults returns c with its zero fields set to their defaults; runID
// is the process's run id.
func (c ProducerConfig) WithDefaults(runID string) ProducerConfig {
	if len(c.Brokers) == 0 {
		c.Brokers = StringList{kafka.DefaultBrokers}
	}
	if c.Prefix == "" {
		c.Prefix = tiers.DefaultPrefix
	}
	if c.Tiers == "" {
		c.Tiers = tiers.DefaultTiers
	}
	if c.RunID == "" {
		c.RunID = runID
	}
	if c.Manifest == "" {
		c.Manifest = "hourglass-manifest-" + c.RunID + ".jsonl"
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = Duration(DefaultStoreTimeout)
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = Duration(DefaultDeliveryTimeout)
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.Outcomes == nil {
		on := true
		c.Outcomes = &on
	}
	if c.OutcomesTopic == "" {
		c.OutcomesTopic = tiers.OutcomesTopic(c.Prefix)
	}
	if c.OutcomeWait == 0 {
		c.OutcomeWait = Duration(DefaultOutcomeWait)
	}
	return c
}

// kafkaKeys are this config's keys of kafka.Config's fields, which name
// them in its problems.
var kafkaKeys = map[string]string{
	"TLSInsecureSkipVerify": "tls.insecureSkipVerify",
	"TLSServerName":         "tls.serverName",
	"TLSCertFile":           "tls.certFile",
	"TLSKeyFile":            "tls.keyFile",
	"TLSCAFile":             "tls.caFile",
	"TLS":                   "tls.enabled",
	"SASLPasswordFile":      "sasl.passwordFile",
	"SASLPassword":          "sasl.password",
	"SASLMechanism":         "sasl.mechanism",
	"SASLUser":              "sasl.user",
	"Brokers":               "brokers",
	"ClientID":              "clientId",
}

// Validate reports every problem of c (after WithDefaults), each starting
// with its key.
func (c ProducerConfig) Validate() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	kc := c.kafka()
	var joined interface{ Unwrap() []error }
	if errors.As(field.Rename(kc.Validate(), func(f string) string { return kafkaKeys[f] }), &joined) {
		errs = append(errs, joined.Unwrap()...)
	}
	if err := tiers.ValidTopic(tiers.OutcomesTopic(c.Prefix)); err != nil {
		bad("prefix", "%q: %v", c.Prefix, err)
	}
	if _, err := tiers.Parse(c.Tiers); err != nil {
		bad("tiers", "%v", err)
	}
	if len(c.Kind) > 128 {
		bad("kind", "%d characters: want at most 128", len(c.Kind))
	}
	if c.StoreURL != "" {
		u, err := url.Parse(c.StoreURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("storeUrl", "%q: want http://host:port", c.StoreURL)
		}
	}
	if c.StoreTimeout <= 0 {
		bad("storeTimeout", "%v: want more than 0", time.Duration(c.StoreTimeout))
	}
	if c.MaxInFlight < 1 || c.MaxInFlight > maxMaxInFlight {
		bad("maxInFlight", "%d: want 1 to %d", c.MaxInFlight, maxMaxInFlight)
	}
	if c.Linger != nil && (*c.Linger < 0 || *c.Linger > Duration(time.Minute)) {
		bad("linger", "%v: want 0 to 1m", time.Duration(*c.Linger))
	}
	if c.DeliveryTimeout < Duration(time.Second) {
		bad("deliveryTimeout", "%v: want at least 1s", time.Duration(c.DeliveryTimeout))
	}
	if len(c.RunID) > maxRunIDLen || tiers.ValidTopic(c.RunID) != nil {
		bad("runId", "%q: want 1 to %d ASCII letters, digits, '.', '_' or '-'", c.RunID, maxRunIDLen)
	}
	if err := tiers.ValidTopic(c.OutcomesTopic); err != nil {
		bad("outcomesTopic", "%q: %v", c.OutcomesTopic, err)
	}
	if c.OutcomeWait < 0 || c.OutcomeWait > Duration(maxOutcomeWait) {
		bad("outcomeWait", "%v: want 0 to %v", time.Duration(c.OutcomeWait), maxOutcomeWait)
	}
	return errs
}

// kafka returns the connection part of c.
func (c ProducerConfig) kafka() kafka.Config {
	kc := kafka.Config{Brokers: c.Brokers, ClientID: c.ClientID}
	if t := c.TLS; t != nil {
		kc.TLS, kc.TLSCAFile, kc.TLSCertFile, kc.TLSKeyFile = t.Enabled, t.CAFile, t.CertFile, t.KeyFile
		kc.TLSServerName, kc.TLSInsecureSkipVerify = t.ServerName, t.InsecureSkipVerify
	}
	if s := c.SASL; s != nil {
		kc.SASLMechanism, kc.SASLUser, kc.SASLPassword, kc.SASLPasswordFile = s.Mechanism, s.User, s.Password, s.PasswordFile
	}
	return kc
}

// MixConfig is the argument of `new hourglass.Mix({...})`.
type MixConfig struct {
	// Tiers are the router's tiers. Default tiers.DefaultTiers.
	Tiers string `json:"tiers"`
	// MaxDelay is the longest delay drawn. Default: the largest tier, 270
	// days with the default ladder: a run that is to end sets it.
	MaxDelay Duration `json:"maxDelay"`
	// PastDue is how far in the past a past_due task is due at most.
	// Default 2s.
	PastDue Duration `json:"pastDue"`
	// PaidFraction is the fraction of orders paid, 0 to 1. Default 0.
	PaidFraction float64 `json:"paidFraction"`
	// Weights are "shape:weight,..." (workload.DefaultWeights is the
	// default).
	Weights string `json:"weights"`
	// Seed makes the draws repeatable; 0 draws a random seed. Default 0.
	Seed int64 `json:"seed"`
}

// workload converts c to a workload.Config, reporting problems with the
// keys of c.
func (c MixConfig) workload() (workload.Config, []error) {
	var errs []error
	raw := c.Tiers
	if raw == "" {
		raw = tiers.DefaultTiers
	}
	w := workload.Config{MaxDelay: time.Duration(c.MaxDelay), PastDue: time.Duration(c.PastDue), PaidFraction: c.PaidFraction}
	t, err := tiers.Parse(raw)
	if err != nil {
		errs = append(errs, fmt.Errorf("tiers: %w", err))
	}
	w.Tiers = t
	if c.Weights != "" {
		ws, err := workload.ParseWeights(c.Weights)
		if err != nil {
			errs = append(errs, fmt.Errorf("weights: %w", err))
		}
		w.Weights = ws
	}
	if len(errs) > 0 {
		return w, errs
	}
	return w, w.WithDefaults().Validate()
}

// decode decodes an exported JS value (maps, slices, numbers, strings) into
// the struct v points to, through JSON. It reports every unknown key and
// every value that does not decode, each starting with its key (nested
// keys as "tls.caFile").
func decode(in any, v any) []error {
	if in == nil {
		return nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return []error{err}
	}
	return decodeObject("", b, reflect.ValueOf(v).Elem())
}

func decodeObject(prefix string, b []byte, v reflect.Value) []error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		name := strings.TrimSuffix(prefix, ".")
		if name == "" {
			return []error{errors.New("want an object")}
		}
		return []error{fmt.Errorf("%s: want an object", name)}
	}
	fields := map[string]int{}
	for i := range v.NumField() {
		if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			fields[tag] = i
		}
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		i, ok := fields[k]
		if !ok {
			errs = append(errs, fmt.Errorf("%s%s: unknown key", prefix, k))
			continue
		}
		f := v.Field(i)
		if string(raw[k]) == "null" {
			continue
		}
		if f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct {
			f.Set(reflect.New(f.Type().Elem()))
			errs = append(errs, decodeObject(prefix+k+".", raw[k], f.Elem())...)
			continue
		}
		if err := json.Unmarshal(raw[k], f.Addr().Interface()); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				err = fmt.Errorf("%s is not a %s", raw[k], te.Type)
			}
			errs = append(errs, fmt.Errorf("%s%s: %w", prefix, k, err))
		}
	}
	return errs
}

// Duration is a time.Duration that decodes from a Go duration string
// ("10s", "1m30s") or a number of milliseconds.
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration (want e.g. 10s, 1m30s, or milliseconds)", s)
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil || math.IsNaN(ms) || math.Abs(ms) > float64(math.MaxInt64/int64(time.Millisecond)) {
		return fmt.Errorf("%s is not a duration (want e.g. \"10s\" or milliseconds)", b)
	}
	*d = Duration(time.Duration(ms * float64(time.Millisecond)))
	return nil
}

// StringList decodes from a comma-separated string or a list of strings.
type StringList []string

// UnmarshalJSON implements json.Unmarshaler.
func (l *StringList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*l = nil
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f != "" {
				*l = append(*l, f)
			}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("%s: want \"host:port,...\" or a list of strings", b)
	}
	*l = list
	return nil
}
