package outcome

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// full is an Event with every field set.
var full = Event{
	V: Version, TaskID: "order-42", Kind: "order-timeout", Outcome: "skipped", Detail: "PAID",
	Error: "boom", Attempt: 2, Hops: 3, Path: "30s,5s,1s*2",
	ScheduledMs: 1_800_000_000_000, DueMs: 1_800_000_037_000, DeadlineMs: 1_800_000_030_000, ForwardedMs: 1_800_000_037_004,
	ClosedMs: 1_800_000_037_010, LatenessMs: 10, Instance: "canceller-0",
	Topic: "hourglass.cancel", Partition: 5, Offset: 1234,
}

func TestRoundTrip(t *testing.T) {
	for _, e := range []Event{full, {V: Version}, {V: Version, TaskID: "x", LatenessMs: -5, Partition: 0, Offset: 0}} {
		b, err := e.Marshal()
		if err != nil {
			t.Fatalf("Marshal %+v: %v", e, err)
		}
		got, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("Unmarshal %s: %v", b, err)
		}
		if got != e {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, e)
		}
	}
}

// TestFieldNames pins the JSON keys: they are ClickHouse columns, so a
// renamed field breaks the recorder and stored data.
func TestFieldNames(t *testing.T) {
	want := []string{
		"v", "task_id", "kind", "outcome", "detail", "error", "attempt", "hops", "path",
		"scheduled_ms", "due_ms", "deadline_ms", "forwarded_ms", "closed_ms", "lateness_ms", "instance",
		"topic", "partition", "offset",
	}
	b, err := full.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("JSON keys\n got %v\nwant %v", got, want)
	}

	// The values land under the right keys.
	for k, v := range map[string]string{
		"v": "1", "task_id": `"order-42"`, "outcome": `"skipped"`, "detail": `"PAID"`,
		"due_ms": "1800000037000", "deadline_ms": "1800000030000", "closed_ms": "1800000037010", "lateness_ms": "10",
		"partition": "5", "offset": "1234", "path": `"30s,5s,1s*2"`,
	} {
		if string(m[k]) != v {
			t.Errorf("%s = %s, want %s", k, m[k], v)
		}
	}
}

// TestOmitEmpty: detail and error are left out when empty; every other field
// is always written, zero or not.
func TestOmitEmpty(t *testing.T) {
	b, err := (&Event{V: Version, TaskID: "x"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"detail", "error"} {
		if _, ok := m[k]; ok {
			t.Errorf("empty %s written: %s", k, b)
		}
	}
	for _, k := range []string{"kind", "outcome", "attempt", "hops", "path", "scheduled_ms", "forwarded_ms", "lateness_ms", "partition", "offset"} {
		if _, ok := m[k]; !ok {
			t.Errorf("zero %s left out: %s", k, b)
		}
	}
}

func TestUnmarshalRejects(t *testing.T) {
	for _, in := range []string{
		``,
		`garbage`,
		`{"v":1,"task_id":`,
		`[1,2]`,
		`"v"`,
		`null`,
		`{}`,
		`{"task_id":"x"}`,
		`{"v":0,"task_id":"x"}`,
		`{"v":2,"task_id":"x"}`,
		`{"v":"1","task_id":"x"}`,
		`{"v":1,"task_id":7}`,
		`{"v":1,"offset":"7"}`,
		// attempt and hops are Int32 columns in ClickHouse: a wider one
		// would be stored cut (4294967297 as 1).
		`{"v":1,"task_id":"x","attempt":4294967297}`,
		`{"v":1,"task_id":"x","attempt":-2147483649}`,
		`{"v":1,"task_id":"x","hops":2147483648}`,
	} {
		if e, err := Unmarshal([]byte(in)); err == nil {
			t.Errorf("Unmarshal(%q) = %+v, want an error", in, e)
		}
	}
}

// TestUnmarshalIgnoresUnknown: a newer writer may add fields within a
// version.
func TestUnmarshalIgnoresUnknown(t *testing.T) {
	e, err := Unmarshal([]byte(`{"v":1,"task_id":"x","new_column":true}`))
	if err != nil || e.TaskID != "x" {
		t.Fatalf("Unmarshal = %+v, %v", e, err)
	}
}

// FuzzUnmarshal: any accepted input is a version-1 event that survives a
// round trip unchanged.
func FuzzUnmarshal(f *testing.F) {
	b, _ := full.Marshal()
	f.Add(b)
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := Unmarshal(in)
		if err != nil {
			return
		}
		if e.V != Version {
			t.Fatalf("accepted version %d", e.V)
		}
		out, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("re-read of %s: %v", out, err)
		}
		if again != e {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", e, again)
		}
	})
}

// TestMarshalBounded: whatever a record carried, an encoded event stays
// small: a 180 kB task id of "<" (which JSON's HTML escaping would make six
// times longer) and a huge error are cut to their limits.
func TestMarshalBounded(t *testing.T) {
	huge := strings.Repeat("<", 180_000)
	e := Event{V: Version, TaskID: huge, Kind: huge, Detail: huge, Error: huge, Path: huge, Instance: huge, Topic: huge}
	b, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 64<<10 {
		t.Fatalf("event of %d bytes", len(b))
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		v    string
		max  int
	}{
		{"task_id", got.TaskID, MaxTaskIDBytes}, {"kind", got.Kind, MaxKindBytes}, {"detail", got.Detail, MaxDetailBytes},
		{"error", got.Error, MaxErrorBytes}, {"path", got.Path, MaxPathBytes}, {"instance", got.Instance, MaxInstanceBytes},
		{"topic", got.Topic, MaxTopicBytes},
	} {
		if len(f.v) != f.max || !strings.HasSuffix(f.v, "...") {
			t.Errorf("%s: %d bytes ending %q, want %d ending in ...", f.name, len(f.v), f.v[max(0, len(f.v)-5):], f.max)
		}
	}
	// A short task id is untouched, and a cut never splits a character.
	short, _ := (&Event{V: Version, TaskID: "order-<42>", Error: strings.Repeat("é", MaxErrorBytes)}).Marshal()
	got, _ = Unmarshal(short)
	if got.TaskID != "order-<42>" || !utf8.ValidString(got.Error) {
		t.Errorf("task id %q, error valid UTF-8 %v", got.TaskID, utf8.ValidString(got.Error))
	}
}

func TestSignVerify(t *testing.T) {
	key := []byte("k3y")
	v := []byte(`{"v":1,"task_id":"42"}`)
	sig := Sign(key, v)
	if !Verify(key, v, sig) {
		t.Fatal("signature does not verify")
	}
	for _, bad := range []struct{ key, v, sig []byte }{
		{[]byte("other"), v, sig},
		{key, []byte(`{"v":1,"task_id":"43"}`), sig},
		{key, v, nil},
		{key, v, []byte("00")},
	} {
		if Verify(bad.key, bad.v, bad.sig) {
			t.Errorf("Verify(%q, %q, %q) = true", bad.key, bad.v, bad.sig)
		}
	}
}

// TestUnmarshalBounded: an event read holds no text field longer than
// Marshal writes, whatever the record carried: a forged event of 900 kB
// fields is cut as Marshal cuts them, not held whole (the recorder batches
// thousands of events).
func TestUnmarshalBounded(t *testing.T) {
	huge := strings.Repeat("x", 900_000)
	in, err := json.Marshal(map[string]any{"v": Version, "task_id": huge, "kind": huge, "outcome": huge, "detail": huge,
		"error": huge, "path": huge, "instance": huge, "topic": huge})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		v    string
		max  int
	}{
		{"task_id", got.TaskID, MaxTaskIDBytes}, {"kind", got.Kind, MaxKindBytes}, {"outcome", string(got.Outcome), MaxOutcomeBytes},
		{"detail", got.Detail, MaxDetailBytes}, {"error", got.Error, MaxErrorBytes}, {"path", got.Path, MaxPathBytes},
		{"instance", got.Instance, MaxInstanceBytes}, {"topic", got.Topic, MaxTopicBytes},
	} {
		if len(f.v) != f.max || !strings.HasSuffix(f.v, "...") {
			t.Errorf("%s: %d bytes, want %d ending in ...", f.name, len(f.v), f.max)
		}
	}
}
