package closer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

func TestMemoryClose(t *testing.T) {
	for _, tc := range []struct {
		name         string
		state        string // "" = the order does not exist
		closeUnknown bool
		want         Result
		wantState    string // "" = still does not exist
		wantCloses   int
	}{
		{name: "unpaid closes", state: StateUnpaid, want: Result{Outcome: outcome.Closed}, wantState: StateClosed, wantCloses: 1},
		{name: "closed stays closed", state: StateClosed, want: Result{Outcome: outcome.AlreadyClosed}, wantState: StateClosed},
		{name: "paid is skipped", state: StatePaid, want: Result{Outcome: outcome.Skipped, Detail: StatePaid}, wantState: StatePaid},
		{name: "other state is skipped", state: "SHIPPED", want: Result{Outcome: outcome.Skipped, Detail: "SHIPPED"}, wantState: "SHIPPED"},
		{name: "unknown not found", want: Result{Outcome: outcome.NotFound}},
		{name: "unknown closed with CloseUnknown", closeUnknown: true, want: Result{Outcome: outcome.Closed}, wantState: StateClosed, wantCloses: 1},
		{name: "CloseUnknown leaves paid alone", state: StatePaid, closeUnknown: true, want: Result{Outcome: outcome.Skipped, Detail: StatePaid}, wantState: StatePaid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Memory{CloseUnknown: tc.closeUnknown}
			if tc.state != "" {
				m.Put("o1", tc.state)
			}
			got, err := m.Close(t.Context(), Task{ID: "o1", Attempt: 1})
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
			if got != tc.want {
				t.Errorf("Close = %+v, want %+v", got, tc.want)
			}
			state, ok := m.State("o1")
			if ok != (tc.wantState != "") || state != tc.wantState {
				t.Errorf("State = %q, %v; want %q, %v", state, ok, tc.wantState, tc.wantState != "")
			}
			if n := m.Closes("o1"); n != tc.wantCloses {
				t.Errorf("Closes = %d, want %d", n, tc.wantCloses)
			}

			// A second close changes nothing: it is idempotent.
			again, err := m.Close(t.Context(), Task{ID: "o1", Attempt: 2})
			if err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if want := tc.want; want.Outcome == outcome.Closed {
				if again.Outcome != outcome.AlreadyClosed {
					t.Errorf("second Close = %+v, want %s", again, outcome.AlreadyClosed)
				}
			} else if again != want {
				t.Errorf("second Close = %+v, want %+v", again, want)
			}
			if n := m.Closes("o1"); n != tc.wantCloses {
				t.Errorf("Closes after the second close = %d, want %d", n, tc.wantCloses)
			}
		})
	}
}

// TestMemoryZero: the zero Memory is an empty store.
func TestMemoryZero(t *testing.T) {
	var m Memory
	if _, ok := m.State("x"); ok {
		t.Error("State of an empty store reports an order")
	}
	if m.Closes("x") != 0 {
		t.Error("Closes of an empty store is not 0")
	}
	if m.Pay("x") {
		t.Error("Pay of an unknown order succeeded")
	}
	if r, err := m.Close(t.Context(), Task{ID: "x"}); err != nil || r.Outcome != outcome.NotFound {
		t.Errorf("Close = %+v, %v; want %s", r, err, outcome.NotFound)
	}
	var m2 Memory
	m2.Put("y", StateUnpaid)
	if s, ok := m2.State("y"); !ok || s != StateUnpaid {
		t.Errorf("State after Put = %q, %v", s, ok)
	}
}

func TestMemoryPay(t *testing.T) {
	for _, tc := range []struct {
		state     string // "" = unknown
		want      bool
		wantState string
	}{
		{StateUnpaid, true, StatePaid},
		{StatePaid, false, StatePaid},
		{StateClosed, false, StateClosed},
		{"SHIPPED", false, "SHIPPED"},
		{"", false, ""},
	} {
		var m Memory
		if tc.state != "" {
			m.Put("o1", tc.state)
		}
		if got := m.Pay("o1"); got != tc.want {
			t.Errorf("Pay of %q = %v, want %v", tc.state, got, tc.want)
		}
		if s, _ := m.State("o1"); s != tc.wantState {
			t.Errorf("Pay of %q: state %q, want %q", tc.state, s, tc.wantState)
		}
	}
}

// TestMemoryConcurrentClose: many closes of one order at once close it
// exactly once; every other close reports AlreadyClosed.
func TestMemoryConcurrentClose(t *testing.T) {
	const n = 50
	var m Memory
	m.Put("o1", StateUnpaid)
	results := make(chan Result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			r, err := m.Close(context.Background(), Task{ID: "o1", Attempt: i + 1})
			if err != nil {
				t.Errorf("Close: %v", err)
			}
			results <- r
		})
	}
	close(start)
	wg.Wait()
	close(results)
	count := map[outcome.Outcome]int{}
	for r := range results {
		count[r.Outcome]++
	}
	if count[outcome.Closed] != 1 || count[outcome.AlreadyClosed] != n-1 || len(count) != 2 {
		t.Errorf("outcomes %v, want 1 %s and %d %s", count, outcome.Closed, n-1, outcome.AlreadyClosed)
	}
	if c := m.Closes("o1"); c != 1 {
		t.Errorf("Closes = %d, want 1", c)
	}
}

// TestMemoryPayRacesClose: when a payment and a close race, exactly one
// wins: either the order is paid and the close skips it, or it is closed and
// the payment is refused.
func TestMemoryPayRacesClose(t *testing.T) {
	won := map[string]int{}
	for i := range 200 {
		var m Memory
		id := fmt.Sprint("o", i)
		m.Put(id, StateUnpaid)
		start := make(chan struct{})
		var (
			wg   sync.WaitGroup
			paid bool
			res  Result
			err  error
		)
		wg.Go(func() { <-start; paid = m.Pay(id) })
		wg.Go(func() { <-start; res, err = m.Close(context.Background(), Task{ID: id}) })
		close(start)
		wg.Wait()
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
		state, _ := m.State(id)
		switch {
		case paid && res == Result{Outcome: outcome.Skipped, Detail: StatePaid} && state == StatePaid && m.Closes(id) == 0:
			won["pay"]++
		case !paid && res == Result{Outcome: outcome.Closed} && state == StateClosed && m.Closes(id) == 1:
			won["close"]++
		default:
			t.Fatalf("round %d: paid=%v close=%+v state=%s closes=%d: not exactly one winner",
				i, paid, res, state, m.Closes(id))
		}
	}
	t.Logf("winners: %v", won)
}

func TestPermanent(t *testing.T) {
	base := errors.New("bad payload")
	if Permanent(nil) != nil {
		t.Fatal("Permanent(nil) is not nil")
	}
	if IsPermanent(nil) {
		t.Error("IsPermanent(nil)")
	}
	if IsPermanent(base) {
		t.Error("a plain error is permanent")
	}
	p := Permanent(base)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"marked", p, true},
		{"wrapped once", fmt.Errorf("close o1: %w", p), true},
		{"wrapped twice", fmt.Errorf("outer: %w", fmt.Errorf("close o1: %w", p)), true},
		{"joined", errors.Join(errors.New("other"), p), true},
		{"wrapped with %v", fmt.Errorf("close o1: %v", p), false}, //nolint:errorlint // the case of an error not wrapped
		{"plain wrapped", fmt.Errorf("close o1: %w", base), false},
	} {
		if got := IsPermanent(tc.err); got != tc.want {
			t.Errorf("%s: IsPermanent = %v, want %v", tc.name, got, tc.want)
		}
	}
	if p.Error() != base.Error() {
		t.Errorf("Permanent changed the message: %q, want %q", p.Error(), base.Error())
	}
	if !errors.Is(p, base) || !errors.Is(fmt.Errorf("x: %w", p), base) {
		t.Error("Permanent hides the cause from errors.Is")
	}
	if !IsPermanent(Permanent(p)) {
		t.Error("Permanent twice is not permanent")
	}
}

func TestCloserFunc(t *testing.T) {
	var got Task
	var c Closer = CloserFunc(func(ctx context.Context, tk Task) (Result, error) {
		got = tk
		return Result{Outcome: outcome.Skipped, Detail: "D"}, ctx.Err()
	})
	want := Task{ID: "o1", Kind: "k", Payload: []byte("p"), Meta: tiers.Meta{Hops: 2}, Attempt: 3}
	r, err := c.Close(t.Context(), want)
	if err != nil || r != (Result{Outcome: outcome.Skipped, Detail: "D"}) {
		t.Fatalf("Close = %+v, %v", r, err)
	}
	if got.ID != want.ID || got.Kind != want.Kind || string(got.Payload) != "p" || got.Meta.Hops != 2 || got.Attempt != 3 {
		t.Errorf("the func saw %+v, want %+v", got, want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Close(ctx, want); !errors.Is(err, context.Canceled) {
		t.Errorf("the func did not get the caller's context: %v", err)
	}
}

func TestLog(t *testing.T) {
	var buf bytes.Buffer
	l := Log{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	due := time.UnixMilli(1_800_000_000_000)
	r, err := l.Close(t.Context(), Task{ID: "order-7", Kind: "order-timeout", Meta: tiers.Meta{Due: due}, Attempt: 1})
	if err != nil || r != (Result{Outcome: outcome.Closed}) {
		t.Fatalf("Close = %+v, %v; want %s", r, err, outcome.Closed)
	}
	for _, want := range []string{"task=order-7", "kind=order-timeout", "attempt=1"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log %q lacks %q", buf.String(), want)
		}
	}

	// A nil Logger logs to slog.Default.
	prev := slog.Default()
	defer slog.SetDefault(prev)
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if r, err := (Log{}).Close(t.Context(), Task{ID: "x"}); err != nil || r.Outcome != outcome.Closed {
		t.Errorf("zero Log: Close = %+v, %v", r, err)
	}
}
