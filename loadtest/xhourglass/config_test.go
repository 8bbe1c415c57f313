package xhourglass

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

func TestDecodeProducerConfig(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want []string // substrings of the problems, in order; nil for none
		// check is run on a config decoded without problems
		check func(t *testing.T, c ProducerConfig)
	}{
		{"nil", nil, nil, func(t *testing.T, c ProducerConfig) {
			if c.Prefix != "" || c.Brokers != nil {
				t.Errorf("decoded %+v from nothing", c)
			}
		}},
		{"brokers string", map[string]any{"brokers": "a:1, b:2,"}, nil, func(t *testing.T, c ProducerConfig) {
			if strings.Join(c.Brokers, "|") != "a:1|b:2" {
				t.Errorf("brokers %q", c.Brokers)
			}
		}},
		{"brokers list", map[string]any{"brokers": []any{"a:1", "b:2"}}, nil, func(t *testing.T, c ProducerConfig) {
			if strings.Join(c.Brokers, "|") != "a:1|b:2" {
				t.Errorf("brokers %q", c.Brokers)
			}
		}},
		{"durations", map[string]any{"deliveryTimeout": "1m30s", "storeTimeout": int64(250), "linger": "0s"}, nil, func(t *testing.T, c ProducerConfig) {
			if time.Duration(c.DeliveryTimeout) != 90*time.Second || time.Duration(c.StoreTimeout) != 250*time.Millisecond || c.Linger == nil || *c.Linger != 0 {
				t.Errorf("deliveryTimeout %v, storeTimeout %v", time.Duration(c.DeliveryTimeout), time.Duration(c.StoreTimeout))
			}
		}},
		{"nested", map[string]any{"tls": map[string]any{"caFile": "/ca.pem"}, "sasl": nil}, nil, func(t *testing.T, c ProducerConfig) {
			if c.TLS == nil || c.TLS.CAFile != "/ca.pem" || c.SASL != nil {
				t.Errorf("tls %+v, sasl %+v", c.TLS, c.SASL)
			}
		}},
		{"not an object", "brokers", []string{"want an object"}, nil},
		{"every problem, sorted by key", map[string]any{
			"brokers": int64(5), "colour": "red", "deliveryTimeout": "soon", "maxInFlight": "many",
			"tls": map[string]any{"caFile": true, "pinned": true}, "sasl": "plain",
		}, []string{
			"brokers: 5: want", "colour: unknown key", `deliveryTimeout: "soon" is not a duration`,
			`maxInFlight: "many" is not a int`, "sasl: want an object", "tls.caFile: true is not a string", "tls.pinned: unknown key",
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c ProducerConfig
			errs := decode(tt.in, &c)
			if len(errs) != len(tt.want) {
				t.Fatalf("problems %v, want %d: %q", errs, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
			if tt.check != nil && len(errs) == 0 {
				tt.check(t, c)
			}
		})
	}
}

func TestProducerConfigDefaults(t *testing.T) {
	c := ProducerConfig{}.WithDefaults("run1")
	want := ProducerConfig{
		Brokers: StringList{"127.0.0.1:9092"}, Prefix: "hourglass.", Tiers: tiers.DefaultTiers, RunID: "run1",
		Manifest: "hourglass-manifest-run1.jsonl", StoreTimeout: Duration(5 * time.Second), MaxInFlight: 10_000,
		DeliveryTimeout: Duration(30 * time.Second), ClientID: "hourglass-k6",
		Outcomes: ptr(true), OutcomesTopic: "hourglass.outcomes", OutcomeWait: Duration(30 * time.Second),
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults\n got %+v\nwant %+v", c, want)
	}
	if errs := (ProducerConfig{}).WithDefaults("run1").Validate(); len(errs) != 0 {
		t.Errorf("the defaults are invalid: %v", errs)
	}
}

func TestProducerConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  ProducerConfig
		want []string
	}{
		{"valid", ProducerConfig{Tiers: "1s,2s", StoreURL: "http://127.0.0.1:8090", TLS: &TLSConfig{Enabled: true}}, nil},
		{"every problem", ProducerConfig{
			Brokers: StringList{"nope"}, Prefix: "bad prefix ", Tiers: "1x", Kind: strings.Repeat("k", 129),
			StoreURL: "ftp://x", StoreTimeout: Duration(-1), MaxInFlight: -1, Linger: ptr(Duration(-time.Second)),
			DeliveryTimeout: Duration(time.Millisecond), RunID: "a/b", OutcomesTopic: "bad topic", OutcomeWait: Duration(-time.Second),
		}, []string{
			`brokers: broker "nope" is not host:port`, `prefix: "bad prefix "`, `tiers: tier "1x"`, "kind: 129 characters",
			`storeUrl: "ftp://x"`, "storeTimeout: -1ns", "maxInFlight: -1", "linger: -1s", "deliveryTimeout: 1ms", `runId: "a/b"`,
			`outcomesTopic: "bad topic"`, "outcomeWait: -1s",
		}},
		{"tls and sasl keys named as in the config", ProducerConfig{
			TLS:  &TLSConfig{CertFile: "/nonexistent/cert.pem"},
			SASL: &SASLConfig{Mechanism: "scram-sha-256"},
		}, []string{"tls.certFile: set without tls.keyFile", "tls.certFile:", "sasl.user: required with sasl.mechanism", "sasl.password: required"}},
		{"unknown sasl mechanism", ProducerConfig{SASL: &SASLConfig{Mechanism: "kerberos"}}, []string{`sasl.mechanism: unknown mechanism "kerberos"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.cfg.WithDefaults("r").Validate()
			if len(errs) != len(tt.want) {
				t.Fatalf("problems %v, want %d: %q", errs, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestMixConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  MixConfig
		want []string
	}{
		{"defaults", MixConfig{}, nil},
		{"max delay below every tier", MixConfig{MaxDelay: Duration(10 * time.Second)}, []string{"weights.between_tiers", "weights.exact_tier", "weights.multi_hop"}},
		{"demo", MixConfig{Tiers: "1s,2s,5s,10s", MaxDelay: Duration(10 * time.Second), PaidFraction: 0.2}, nil},
		{"bad tiers and weights", MixConfig{Tiers: "x", Weights: "a:1"}, []string{`tiers: tier "x"`, `weights: unknown shape "a"`}},
		{"bad values", MixConfig{Tiers: "1s", MaxDelay: Duration(-time.Second), PaidFraction: 2}, []string{"maxDelay: -1s", "paidFraction: 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := tt.cfg.workload()
			if len(errs) != len(tt.want) {
				t.Fatalf("problems %v, want %d: %q", errs, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestDurationDecode(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{`"10s"`, 10 * time.Second, false},
		{`"1h30m"`, 90 * time.Minute, false},
		{`1500`, 1500 * time.Millisecond, false},
		{`0.5`, 500 * time.Microsecond, false},
		{`"ten"`, 0, true},
		{`true`, 0, true},
		{`1e300`, 0, true},
	}
	for _, tt := range tests {
		var d Duration
		err := d.UnmarshalJSON([]byte(tt.in))
		if (err != nil) != tt.wantErr || (!tt.wantErr && time.Duration(d) != tt.want) {
			t.Errorf("%s: %v, %v; want %v, error %v", tt.in, time.Duration(d), err, tt.want, tt.wantErr)
		}
	}
}

func ptr[T any](v T) *T { return &v }
