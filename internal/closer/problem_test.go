package closer

import (
	"errors"
	"fmt"
	"testing"
)

func TestProblems(t *testing.T) {
	var none Problems
	if err := none.Err(); err != nil {
		t.Fatalf("no problems: Err() = %v, want nil", err)
	}

	cause := errors.New("no such file")
	var p Problems
	p.Add("url", "required")
	p.Add("dsn", "%w", cause)
	p.Add("", "want a mapping")
	p.AddNamed(errors.New("tls.cert_file and tls.key_file go together"), fmt.Errorf("tls.ca_file: %w", cause))
	tests := []struct{ key, msg, under, underMsg string }{
		{"url", "url: required", "closers.a.http.url", "closers.a.http.url: required"},
		{"dsn", "dsn: no such file", "closers.a.http.dsn", "closers.a.http.dsn: no such file"},
		{"", "want a mapping", "closers.a.http", "closers.a.http: want a mapping"},
		{"tls.cert_file", "tls.cert_file and tls.key_file go together", "closers.a.http.tls.cert_file", "closers.a.http.tls.cert_file and tls.key_file go together"},
		{"tls.ca_file", "tls.ca_file: no such file", "closers.a.http.tls.ca_file", "closers.a.http.tls.ca_file: no such file"},
	}
	if len(p) != len(tests) {
		t.Fatalf("%d problems, want %d", len(p), len(tests))
	}
	for i, tt := range tests {
		if p[i].Key != tt.key || p[i].Error() != tt.msg {
			t.Errorf("problem %d: key %q, %q; want key %q, %q", i, p[i].Key, p[i], tt.key, tt.msg)
		}
		u := p[i].Under("closers.a.http")
		if u.Key != tt.under || u.Error() != tt.underMsg {
			t.Errorf("problem %d under closers.a.http: key %q, %q; want key %q, %q", i, u.Key, u, tt.under, tt.underMsg)
		}
	}

	err := fmt.Errorf("http closer: %w", p.Err())
	want := "http closer: url: required\ndsn: no such file\nwant a mapping\n" +
		"tls.cert_file and tls.key_file go together\ntls.ca_file: no such file"
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant, one problem a line as errors.Join:\n%s", err, want)
	}
	var got Problems
	if !errors.As(err, &got) || len(got) != len(p) {
		t.Errorf("errors.As found %d problems, want %d", len(got), len(p))
	}
	if !errors.Is(err, cause) || !errors.Is(got[4].Under("x"), cause) {
		t.Errorf("the cause of a problem is lost")
	}
}
