package canceller

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupClient pins the canceller's group client: the 6 s session
// timeout by default (what a dead canceller costs its closes), the one
// configured otherwise, read committed (a record of an aborted transaction
// is never closed) and the instance id of a static member (a restarted
// canceller takes its partitions back at once). The values are written
// out, so that a change of a default fails here.
func TestGroupClient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		session time.Duration
		id      string // "" for a dynamic member
	}{
		{"defaults", Config{}, 6 * time.Second, ""},
		{"static", Config{InstanceID: "canceller-0", SessionTimeout: 10 * time.Second}, 10 * time.Second, "canceller-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := setup(t, tc.cfg, nil).c.Client()
			if got := cl.OptValue(kgo.SessionTimeout); got != tc.session {
				t.Errorf("session timeout %v, want %v", got, tc.session)
			}
			// kgo keeps the isolation level as Kafka's number: 1 is read
			// committed.
			if got := cl.OptValue(kgo.FetchIsolationLevel); got != int8(1) {
				t.Errorf("isolation level %v, want 1 (read committed)", got)
			}
			if got := cl.OptValues(kgo.InstanceID); got[0] != tc.id || got[1] != (tc.id != "") {
				t.Errorf("instance id %q (set: %v), want %q", got[0], got[1], tc.id)
			}
		})
	}
}
