package closer

import (
	"fmt"
	"strings"
)

// Problem is a problem of a closer's configuration at one of its keys. Its
// message starts with the key, so that it reads on its own ("url:
// required"), and Key lets a closers file place it: under the kind's path,
// at the line of the key.
type Problem struct {
	// Key is the dotted key the problem is about: "url", "tls.ca_file",
	// "reconcile.deadline"; "" for the configuration as a whole.
	Key string
	// Err is the problem; its message starts with Key.
	Err error
}

// Error returns the message of Err, which starts with Key.
func (p *Problem) Error() string { return p.Err.Error() }

// Unwrap returns Err.
func (p *Problem) Unwrap() error { return p.Err }

// Under returns p with its key and message placed under path:
// closers.order-timeout.sql.table for the key table under
// closers.order-timeout.sql.
func (p *Problem) Under(path string) *Problem {
	if p.Key == "" {
		return &Problem{Key: path, Err: fmt.Errorf("%s: %w", path, p.Err)}
	}
	return &Problem{Key: path + "." + p.Key, Err: fmt.Errorf("%s.%w", path, p.Err)}
}

// Problems are the problems of a configuration, collected so that its
// Validate reports every one at once. As an error they read one a line, as
// errors.Join would join them; errors.As finds them in an error that wraps
// them.
type Problems []*Problem

// Add adds the problem "key: " and the message of format and args.
func (p *Problems) Add(key, format string, args ...any) {
	err := fmt.Errorf(format, args...)
	if key != "" {
		err = fmt.Errorf("%s: %w", key, err)
	}
	*p = append(*p, &Problem{Key: key, Err: err})
}

// AddNamed adds errors whose messages already start with their dotted key,
// such as credential.TLS's ("tls.ca_file: ...", "tls.cert_file and
// tls.key_file go together"); the key is their first word.
func (p *Problems) AddNamed(errs ...error) {
	for _, err := range errs {
		key, _, _ := strings.Cut(err.Error(), " ")
		*p = append(*p, &Problem{Key: strings.TrimRight(key, ":,"), Err: err})
	}
}

// Err returns p as an error; nil when there are no problems.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return p
}

// Error returns the messages of the problems, one a line.
func (p Problems) Error() string {
	msgs := make([]string, len(p))
	for i, q := range p {
		msgs[i] = q.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (p Problems) Unwrap() []error {
	errs := make([]error, len(p))
	for i, q := range p {
		errs[i] = q
	}
	return errs
}
