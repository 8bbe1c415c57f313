package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hourglass/hourglass/internal/console"
	"github.com/hourglass/hourglass/internal/term"
	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// hostileID is a task id a hostile producer may send.
const hostileID = "<script>alert(1)</script>\x1b[2J\u202e"

// TestConsole runs a pipeline (router, canceller, recorder indexing into
// ClickHouse) with tasks in every state, and drives the console in
// headless Chromium: the pages render, a lookup finds a scheduled, a
// cancelled and a closed task, a dead letter is replayed after a dry run,
// cancel and reschedule work with actions allowed and are refused without
// them or without the token, and a cross-origin POST is refused.
func TestConsole(t *testing.T) {
	p := startPipeline(t)
	now := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, task := range []tiers.Task{
		{ID: "order-scheduled", Due: now.Add(30 * time.Minute)},
		{ID: "order-cancelled", Due: now.Add(30 * time.Minute)},
		{ID: "order-closed", Due: now.Add(200 * time.Millisecond)},
		{ID: "order-dead", Due: now.Add(200 * time.Millisecond), Kind: "mystery"}, // no closer: dead-lettered
		{ID: hostileID, Due: now.Add(40 * time.Minute), Kind: "<b>kind</b>"},
		{ID: "order-to-cancel", Due: now.Add(30 * time.Minute)},
		{ID: "order-to-move", Due: now.Add(30 * time.Minute)},
		{ID: "order-token", Due: now.Add(30 * time.Minute)},
	} {
		p.schedule(task)
	}
	if err := p.sched.Cancel(ctx, "order-cancelled", time.Time{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 90*time.Second, "the index to hold every task in its state", func() bool {
		return len(p.task("order-scheduled").Deadlines) == 1 && len(p.task(hostileID).Deadlines) == 1 &&
			len(p.task("order-cancelled").Cancels) == 1 && len(p.task("order-closed").Attempts) > 0 &&
			len(p.task("order-dead").DeadLetters) == 1 && len(p.task("order-token").Deadlines) == 1
	}, func() string {
		return "closed: " + strconv.Itoa(len(p.task("order-closed").Attempts)) + " attempts; dead: " + strconv.Itoa(len(p.task("order-dead").DeadLetters)) + " dead letters"
	})

	base := p.serve(console.Config{AllowActions: true})
	browser := newBrowser(t)

	t.Run("overview", func(t *testing.T) {
		b := browser.in(t)
		b.open(base + "/")
		total, err := strconv.Atoi(strings.ReplaceAll(b.text("#forecast-total"), ",", ""))
		if err != nil || total < 2 {
			t.Errorf("forecast total %d (%v), want at least the 2 open deadlines of the next hour", total, err)
		}
		if s := b.text("#summary"); !strings.Contains(s, "close attempts") {
			t.Errorf("no outcome summary: %q", s)
		}
		if s := b.text("#outcome-table"); !strings.Contains(s, "closed") {
			t.Errorf("outcome table lacks closed: %q", s)
		}
		b.screenshot("overview")
	})

	t.Run("lookup", func(t *testing.T) {
		b := browser.in(t)
		for _, tc := range []struct{ id, want, state string }{
			{"order-scheduled", "scheduled", "waiting"},
			{"order-cancelled", "cancelled", "came before the due time: the router drops it"},
			{"order-closed", "close attempt 1", "closed"},
		} {
			b.open(base + "/task")
			b.do(chromedp.SetValue("#task-id", tc.id, chromedp.ByQuery), chromedp.Click("#lookup", chromedp.ByQuery),
				chromedp.WaitVisible("#timeline", chromedp.ByQuery))
			if s := b.text("#timeline"); !strings.Contains(s, tc.want) {
				t.Errorf("timeline of %s lacks %q:\n%s", tc.id, tc.want, s)
			}
			if s := b.text("#deadlines"); !strings.Contains(s, tc.state) {
				t.Errorf("the deadline of %s is not shown %q:\n%s", tc.id, tc.state, s)
			}
			if tc.id == "order-closed" && !strings.Contains(b.text("#timeline"), "closed") {
				t.Errorf("timeline of order-closed shows no closed outcome:\n%s", b.text("#timeline"))
			}
			if tc.id == "order-cancelled" {
				b.screenshot("task")
			}
		}
	})

	t.Run("hostile id", func(t *testing.T) {
		b := browser.in(t)
		b.open(base + "/task?id=" + url.QueryEscape(hostileID))
		b.do(chromedp.WaitVisible("#timeline", chromedp.ByQuery))
		if got, want := b.text("#task-title"), term.Quote(hostileID); got != want {
			t.Errorf("title shows %q, want the quoted %q", got, want)
		}
		if n := evaluate[int](b, "document.scripts.length"); n != 0 {
			t.Errorf("the page holds %d script elements", n)
		}
		if strings.Contains(b.html(), "<b>kind</b>") {
			t.Error("the kind's markup reached the page unescaped")
		}
	})

	t.Run("replay", func(t *testing.T) {
		b := browser.in(t)
		b.open(base + "/dlq?task=order-dead")
		if s := b.text("#dlq-table"); !strings.Contains(s, "unknown_kind") {
			t.Fatalf("dead letters lack order-dead's unknown_kind:\n%s", s)
		}
		b.screenshot("dlq")
		b.do(chromedp.Click("#dry-run-button", chromedp.ByQuery), chromedp.WaitVisible("#dry-run", chromedp.ByQuery))
		if s := b.text("#dry-run"); !strings.Contains(s, "1 would be replayed") {
			t.Errorf("dry run says %q", s)
		}
		if s := b.text("#replay-table"); !strings.Contains(s, tiers.CancelTopic(p.prefix)) {
			t.Errorf("dry run does not replay to %s:\n%s", tiers.CancelTopic(p.prefix), s)
		}
		b.screenshot("dlq-dry-run")
		// The dry run produced nothing: the dead letter is still alone.
		if n := len(p.task("order-dead").DeadLetters); n != 1 {
			t.Errorf("after the dry run order-dead has %d dead letters, want 1", n)
		}
		b.do(chromedp.Click("#confirm", chromedp.ByQuery), chromedp.WaitVisible("#replayed", chromedp.ByQuery))
		if s := b.text("#replayed"); !strings.Contains(s, "Replayed 1") {
			t.Errorf("replay says %q", s)
		}
		// Back in the cancel topic, the canceller dead-letters it again.
		poll.Until(t, 60*time.Second, "the replayed dead letter to pass the canceller again", func() bool {
			return len(p.task("order-dead").DeadLetters) == 2
		}, nil)
	})

	t.Run("cancel and reschedule", func(t *testing.T) {
		b := browser.in(t)
		b.open(base + "/task?id=order-to-cancel")
		b.do(chromedp.Click("#cancel", chromedp.ByQuery), chromedp.WaitVisible("#result", chromedp.ByQuery))
		if s := b.text("#result"); !strings.Contains(s, "Cancellation recorded") {
			t.Errorf("cancel says %q", s)
		}
		b.open(base + "/task?id=order-to-move")
		b.do(chromedp.Evaluate("document.querySelector('#reschedule-at').value = ''; true", nil), chromedp.SetValue("#reschedule-in", "45m", chromedp.ByQuery),
			chromedp.Click("#reschedule", chromedp.ByQuery), chromedp.WaitVisible("#result", chromedp.ByQuery))
		if s := b.text("#result"); !strings.Contains(s, "Rescheduled") {
			t.Errorf("reschedule says %q", s)
		}
		poll.Until(t, 60*time.Second, "the cancellation and the new deadline in the index", func() bool {
			return len(p.task("order-to-cancel").Cancels) == 1 && len(p.task("order-to-move").Deadlines) == 2 && len(p.task("order-to-move").Cancels) == 1
		}, nil)
	})

	t.Run("read-only", func(t *testing.T) {
		b := browser.in(t)
		ro := p.serve(console.Config{})
		b.open(ro + "/task?id=order-scheduled")
		b.do(chromedp.WaitVisible("#timeline", chromedp.ByQuery))
		if evaluate[bool](b, "document.querySelector('#task-actions') !== null") {
			t.Error("a read-only console shows the action forms")
		}
		if s := b.text("#mode"); s != "read-only" {
			t.Errorf("mode %q, want read-only", s)
		}
		b.open(ro + "/dlq")
		if evaluate[bool](b, "document.querySelector('#dry-run-form') !== null") {
			t.Error("a read-only console shows the replay form")
		}
		for _, path := range []string{"/task/cancel", "/task/reschedule", "/dlq/replay"} {
			code, body := post(t, ro+path, "id=order-scheduled&in=1m&mode=dry-run", nil)
			if code != http.StatusForbidden || !strings.Contains(body, "read-only") {
				t.Errorf("POST %s to a read-only console: %d, want 403 saying read-only:\n%s", path, code, body)
			}
		}
	})

	t.Run("token", func(t *testing.T) {
		b := browser.in(t)
		const token = "console-test-token-0123456789"
		tb := p.serve(console.Config{AllowActions: true, TokenFile: tokenFile(t, token)})
		for _, h := range []http.Header{nil, {"Authorization": {"Bearer wrong-token-0123456789"}}} {
			if code, body := post(t, tb+"/task/cancel", "id=order-token", h); code != http.StatusUnauthorized {
				t.Errorf("cancel with %v: %d, want 401:\n%s", h, code, body)
			}
		}
		if n := len(p.task("order-token").Cancels); n != 0 {
			t.Fatalf("order-token has %d cancellations after refused requests", n)
		}
		code, body := post(t, tb+"/task/cancel", "id=order-token", http.Header{"Authorization": {"Bearer " + token}})
		if code != http.StatusOK || !strings.Contains(body, "Cancellation recorded") {
			t.Errorf("cancel with the token: %d:\n%s", code, body)
		}
		// In the browser: the login form, then the pages.
		b.open(tb + "/")
		b.do(chromedp.WaitVisible("#token", chromedp.ByQuery))
		b.screenshot("login")
		b.do(chromedp.SetValue("#token", "not-the-token", chromedp.ByQuery), chromedp.Click("#login", chromedp.ByQuery), chromedp.WaitVisible("#error", chromedp.ByQuery))
		b.do(chromedp.SetValue("#token", token, chromedp.ByQuery), chromedp.Click("#login", chromedp.ByQuery), chromedp.WaitVisible("#forecast", chromedp.ByQuery))
		if s := b.text("#mode"); s != "actions enabled" {
			t.Errorf("after login the mode is %q", s)
		}
	})

	t.Run("csrf", func(t *testing.T) {
		b := browser.in(t)
		// A POST another origin makes, as a browser sends it.
		code, body := post(t, base+"/task/cancel", "id=order-scheduled", http.Header{"Origin": {"http://127.0.0.1:1"}, "Sec-Fetch-Site": {"cross-site"}})
		if code != http.StatusForbidden || !strings.Contains(body, "another origin") {
			t.Errorf("cross-origin POST: %d, want 403:\n%s", code, body)
		}
		// A same-origin POST without the form's token.
		code, body = post(t, base+"/task/cancel", "id=order-scheduled", nil)
		if code != http.StatusForbidden || !strings.Contains(body, "security token") {
			t.Errorf("POST without the form token: %d, want 403:\n%s", code, body)
		}
		// A page of another origin (another port) that submits a form to
		// the console when it loads.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<!doctype html><form id="f" method="post" action="` + base + `/task/cancel"><input name="id" value="order-scheduled"></form><script>document.getElementById("f").submit()</script>`))
		}))
		defer evil.Close()
		defer evil.CloseClientConnections()
		b.do(chromedp.Navigate(evil.URL), chromedp.WaitVisible("#error", chromedp.ByQuery))
		if s := b.text("#error"); !strings.Contains(s, "another origin") {
			t.Errorf("the forged form got %q", s)
		}
		if n := len(p.task("order-scheduled").Cancels); n != 0 {
			t.Errorf("order-scheduled has %d cancellations after forged requests", n)
		}
	})
}
