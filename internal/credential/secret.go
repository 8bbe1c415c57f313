package credential

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
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

// UnmarshalYAML decodes a Secret from a mapping of one of env, file and
// value, refusing unknown keys. A Secret written as a plain value is
// refused with how to write it, without repeating the value: it may be the
// secret itself.
func (s *Secret) UnmarshalYAML(n *yaml.Node) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	const how = "a secret is written {env: NAME} (an environment variable) or {file: PATH} (a file), or {value: ...} inline for tests"
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		*s = Secret{}
		return nil
	case n.Kind == yaml.SequenceNode:
		return errors.New(how + "; got a list")
	case n.Kind != yaml.MappingNode:
		return errors.New(how + "; got a plain value")
	}
	var out Secret
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var dst *string
		switch k.Value {
		case "env":
			dst = &out.Env
		case "file":
			dst = &out.File
		case "value":
			dst = &out.Value
		default:
			return fmt.Errorf("unknown key %q; %s", k.Value, how)
		}
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: want a string", k.Value)
		}
		*dst = v.Value
	}
	*s = out
	return nil
}
