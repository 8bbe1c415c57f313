package credential

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Secret is a credential (a DSN, a token, a password) given by reference,
// so that configuration files and Helm values never hold it:
//
//	dsn: {env: ORDERS_DSN}
//	token: {file: /var/run/secrets/orders/token}
//
// Value holds it inline, for local use and tests. Exactly one field is set;
// the zero Secret is unset (see IsZero).
type Secret struct {
	// Env names an environment variable holding the secret.
	Env string `yaml:"env"`
	// File is a file holding the secret; one trailing newline is dropped.
	// The file is read each time the secret is resolved, so a rotated
	// Kubernetes Secret is picked up.
	File string `yaml:"file"`
	// Value is the secret itself.
	Value string `yaml:"value"`
}

// IsZero reports whether no field is set.
func (s Secret) IsZero() bool { return s == Secret{} }

// Validate reports a Secret with more than one field set, a named
// environment variable that is unset or empty, or an unreadable file.
func (s Secret) Validate() error {
	n := 0
	for _, f := range []string{s.Env, s.File, s.Value} {
		if f != "" {
			n++
		}
	}
	if n > 1 {
		return errors.New("set one of env, file and value")
	}
	_, err := s.Resolve()
	return err
}

// Resolve returns the secret; "" and nil for the zero Secret.
func (s Secret) Resolve() (string, error) {
	switch {
	case s.Env != "":
		v, ok := os.LookupEnv(s.Env)
		if !ok || v == "" {
			return "", fmt.Errorf("environment variable %s is not set", s.Env)
		}
		return v, nil
	case s.File != "":
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", err
		}
		v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if v == "" {
			return "", fmt.Errorf("%s is empty", s.File)
		}
		return v, nil
	}
	return s.Value, nil
}

// String hides the secret: it names where the secret comes from.
func (s Secret) String() string {
	switch {
	case s.Env != "":
		return "env:" + s.Env
	case s.File != "":
		return "file:" + s.File
	case s.Value != "":
		return "value:<redacted>"
	}
	return "unset"
}
