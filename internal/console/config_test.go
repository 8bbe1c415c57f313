package console_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hourglass/hourglass/internal/console"
	"github.com/hourglass/hourglass/internal/field"
)

// TestConfigValidate: each problem names its field; actions beyond
// loopback need a token or client certificates.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   console.Config
		field string // "" for valid
	}{
		{"defaults", console.Config{}, ""},
		{"read-only beyond loopback", console.Config{Listen: "0.0.0.0:8089"}, ""},
		{"actions on loopback", console.Config{AllowActions: true}, ""},
		{"actions on localhost", console.Config{Listen: "localhost:8089", AllowActions: true}, ""},
		{"actions on ::1", console.Config{Listen: "[::1]:8089", AllowActions: true}, ""},
		{"actions beyond loopback", console.Config{Listen: "0.0.0.0:8089", AllowActions: true}, "AllowActions"},
		{"actions beyond loopback with a token", console.Config{Listen: "0.0.0.0:8089", AllowActions: true, TokenFile: "t"}, ""},
		{"actions beyond loopback with client certificates", console.Config{Listen: "192.0.2.1:8089", AllowActions: true,
			TLS: console.ServerTLS{CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}}, ""},
		{"no host", console.Config{Listen: ":8089"}, "Listen"},
		{"bad port", console.Config{Listen: "127.0.0.1:x"}, "Listen"},
		{"client CA without certificate", console.Config{TLS: console.ServerTLS{ClientCAFile: "ca"}}, "TLS.ClientCAFile"},
		{"key without certificate", console.Config{TLS: console.ServerTLS{KeyFile: "k"}}, "TLS.KeyFile"},
		{"too many rows", console.Config{MaxRows: 1_000_000}, "MaxRows"},
		{"target is the dead-letter topic", console.Config{Targets: []string{"hourglass.dlq"}}, "Targets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.WithDefaults().Validate()
			var fe *field.Error
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
				t.Errorf("Validate: %v, want a problem of %s", err, tc.field)
			}
		})
	}
	err := console.Config{Listen: "0.0.0.0:1", AllowActions: true}.WithDefaults().Validate()
	if err == nil || !strings.Contains(err.Error(), "TokenFile") || !strings.Contains(err.Error(), "TLS.ClientCAFile") {
		t.Errorf("actions beyond loopback: %v, want it to name TokenFile and TLS.ClientCAFile", err)
	}
}
