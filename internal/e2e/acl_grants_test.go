package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// grantProbe shows that a grant is needed: without it, a command fails, or
// a service says what it was refused.
type grantProbe struct {
	// args is the command line, run as the row's principal: a service's
	// (started, watched until it says what was refused, then killed) with
	// service set, else a command's (run to its end: it must fail).
	args    []string
	service bool
	// want are the parts of the output's line that says what was refused.
	want []string
}

// Parts of the lines that say what was refused.
const (
	topicDenied = "TOPIC_AUTHORIZATION_FAILED"
	groupDenied = "GROUP_AUTHORIZATION_FAILED"
	txnDenied   = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
	// clusterDenied is the refusal of an idempotent producer to a principal
	// that may write no topic.
	clusterDenied = "CLUSTER_AUTHORIZATION_FAILED"
)

// grantProbes returns a probe of each grant of aclTable, by "principal
// name operation". closers is the canceller's closers file, ch the
// recorder's ClickHouse flags.
func grantProbes(closers string, ch []string) map[string]grantProbe {
	tierFlag := []string{"--tiers", aclTiers}
	router := append([]string{"router", "--http-addr", "127.0.0.1:0", "--log-level", "warn"}, tierFlag...)
	canceller := append([]string{"canceller", "--closers", closers, "--http-addr", "127.0.0.1:0", "--log-level", "warn"}, tierFlag...)
	recorder := append([]string{"recorder", "--http-addr", "127.0.0.1:0", "--log-level", "warn"}, ch...)
	svc := func(args []string, want ...string) grantProbe {
		return grantProbe{args: args, service: true, want: want}
	}
	cmd := func(args []string, want ...string) grantProbe { return grantProbe{args: args, want: want} }
	schedule := append([]string{"schedule", "--id", "probe-new", "--in", "1s"}, tierFlag...)
	reschedule := append([]string{"reschedule", "--id", "probe-due", "--in", "1s"}, tierFlag...)
	replay := append([]string{"dlq", "replay"}, tierFlag...)
	check := append([]string{"topics", "--check", "--partitions", "1"}, tierFlag...)
	return map[string]grantProbe{
		"router hourglass.delay.* Read":         svc(router, "fetch failed", "topic=hourglass.delay.", topicDenied),
		"router hourglass.delay.* Write":        svc(router, "producing to an own topic failed", "to=hourglass.delay.1s", "kind=hop", topicDenied),
		"router hourglass.cancel Write":         svc(router, "producing to an own topic failed", "to=hourglass.cancel ", topicDenied),
		"router hourglass.dlq Write":            svc(router, "the dead-letter topic refused a record", "dlq_topic=hourglass.dlq", topicDenied),
		"router hourglass.outcomes Write":       svc(router, "producing the outcome of a cancelled deadline failed", "to=hourglass.outcomes", topicDenied),
		"router hourglass.cancellations Read":   svc(router, "fetching cancellations failed", "topic=hourglass.cancellations", topicDenied),
		"router hourglass-router Read":          svc(router, "unable to join group", groupDenied),
		"canceller hourglass.cancel Read":       svc(canceller, "fetch failed", "topic=hourglass.cancel ", topicDenied),
		"canceller hourglass.delay.* Write":     svc(canceller, "produce refused", "record=retry", "to=hourglass.delay.", topicDenied),
		"canceller hourglass.outcomes Write":    svc(canceller, "produce refused", "record=outcome", "to=hourglass.outcomes", topicDenied),
		"canceller hourglass.dlq Write":         svc(canceller, "produce refused", "record=dead_letter", "to=hourglass.dlq", topicDenied),
		"canceller hourglass-canceller Read":    svc(canceller, "unable to join group", groupDenied),
		"recorder hourglass.outcomes Read":      svc(recorder, "fetch failed", "topic=hourglass.outcomes", topicDenied),
		"recorder hourglass-recorder Read":      svc(recorder, "unable to join group", groupDenied),
		"recorder hourglass.delay.* Read":       svc(recorder, "fetch failed", "topic=hourglass.delay.", topicDenied),
		"recorder hourglass.cancellations Read": svc(recorder, "fetch failed", "topic=hourglass.cancellations", topicDenied),
		"recorder hourglass.dlq Read":           svc(recorder, "fetch failed", "topic=hourglass.dlq", topicDenied),
		// Its only Write gone, the principal may not start an idempotent
		// producer (which Write on any topic allows) either.
		"producer hourglass.delay.* Write":            cmd(schedule, clusterDenied),
		"cancel-writer hourglass.cancellations Write": cmd([]string{"cancel", "--id", "probe-due"}, clusterDenied),
		// The broker's refusal of a topic in a transaction does not name
		// it; the control run with every grant tells the two apart.
		"rescheduler hourglass.delay.* Write":       cmd(reschedule, topicDenied),
		"rescheduler hourglass.cancellations Write": cmd(reschedule, topicDenied),
		"rescheduler hourglass-reschedule-* Write":  cmd(reschedule, txnDenied),
		// A prefix of its own: the topics are to be created.
		"topics-admin hourglass.* Create":          cmd(append([]string{"topics", "--topic-prefix", "hourglass.new."}, tierFlag...), "create topic", topicDenied),
		"topics-admin hourglass.* Describe":        cmd(check, "describe topic", topicDenied),
		"topics-admin hourglass.* DescribeConfigs": cmd(check, "could not be checked", "DescribeConfigs"),
		"status-reader hourglass.* Read":           cmd(append([]string{"status", "probe-due"}, tierFlag...), topicDenied),
		"dlq-reader hourglass.dlq Read":            cmd([]string{"dlq", "list"}, "read hourglass.dlq", topicDenied),
		"dlq-replayer hourglass.dlq Read":          cmd(replay, "read hourglass.dlq", topicDenied),
		"dlq-replayer hourglass.delay.* Write":     cmd(append(replay, "--key", "from-delay"), "dlq replay", topicDenied),
		"dlq-replayer hourglass.cancel Write":      cmd(append(replay, "--key", "from-cancel"), "dlq replay", topicDenied),
	}
}

// without returns aclTable without the grant of op in row i. Describe,
// which Read and Write imply, is granted in its place: the checks at start
// need it, and what is shown is the need of the grant itself.
func without(t testing.TB, i int, op kmsg.ACLOperation) []aclRow {
	rows := slices.Clone(aclTable)
	r := rows[i]
	var left []string
	for _, o := range r.operations(t) {
		if o != op {
			left = append(left, opName(o))
		}
	}
	if (op == kmsg.ACLOperationRead || op == kmsg.ACLOperationWrite) && !slices.Contains(left, "Describe") {
		left = append(left, "Describe")
	}
	r.ops = strings.Join(left, ", ")
	if r.ops == "" {
		return slices.Delete(rows, i, i+1)
	}
	rows[i] = r
	return rows
}

// opName is the name of op as the table writes it.
func opName(op kmsg.ACLOperation) string {
	s := strings.ToLower(op.String())
	for _, n := range []string{"Read", "Write", "Create", "Describe", "DescribeConfigs"} {
		if strings.ToLower(n) == strings.ReplaceAll(s, "_", "") {
			return n
		}
	}
	return op.String()
}

// TestEachGrantIsNeeded takes each grant of the ACL table away in turn, on
// a broker of its own, and shows that what needs it fails: the command
// that needs it fails with the broker's refusal, or the service says what
// it was refused. With every grant, as TestLeastPrivilege shows and the
// control run of each command here, everything works: the table is the
// least that does.
func TestEachGrantIsNeeded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	orders := newACLOrders()
	orders.busy["probe-busy"] = true
	orders.refuse["probe-refused"] = true
	srv := httptest.NewServer(orders)
	defer srv.Close()
	_, ch, _ := startClickHouse(ctx, t, "hourglass_acl_probe")
	probes := grantProbes(closersFile(t, srv), []string{"--clickhouse-addr", ch.Addr, "--clickhouse-database", ch.Database})

	control := newACLCluster(t, aclTable)
	seedProbes(ctx, t, control)
	for i, r := range aclTable {
		for _, op := range r.operations(t) {
			key := strings.Join([]string{r.principal, r.name, opName(op)}, " ")
			pr, ok := probes[key]
			if !ok {
				t.Errorf("no probe shows that %s needs %s on %s %s", r.principal, opName(op), r.resource, r.name)
				continue
			}
			delete(probes, key)
			t.Run(key, func(t *testing.T) {
				if !pr.service {
					if out, errOut, err := runCmd(t, control.as(r.principal, pr.args...)...); err != nil {
						t.Fatalf("with every grant, hourglass %s: %v\n%s%s", strings.Join(pr.args, " "), err, out, errOut)
					}
				}
				a := newACLCluster(t, without(t, i, op))
				seedProbes(ctx, t, a)
				runProbe(t, a, r.principal, pr)
			})
		}
	}
	for key := range probes {
		t.Errorf("probe %q is of no grant of the table", key)
	}
}

// runProbe runs pr as principal on a and checks that it was refused.
func runProbe(t *testing.T, a *aclCluster, principal string, pr grantProbe) {
	t.Helper()
	if !pr.service {
		out, errOut, err := runCmd(t, a.as(principal, pr.args...)...)
		if err == nil || !hasLine(out+errOut, pr.want...) {
			t.Errorf("hourglass %s: %v; want it to fail saying %q\n%s%s", strings.Join(pr.args, " "), err, pr.want, out, errOut)
		}
		t.Logf("hourglass %s: %s", strings.Join(pr.args, " "), lineWith(out+errOut, pr.want...))
		return
	}
	p := startProc(t, principal, a.as(principal, pr.args...)...)
	p.stopping.Store(true) // a service may stop on a refusal: what it says counts
	if err := waitLine(t, p, pr.want...); err != nil {
		t.Errorf("%s did not say %q (%v):\n%s", principal, pr.want, err, p.out.String())
	}
	t.Logf("%s: %s", principal, lineWith(p.out.String(), pr.want...))
}

// seedProbes creates the pipeline's topics on a and puts in them what the
// probes need, as the superuser: a deadline due at once, one that hops, one
// cancelled, one without a due time; records due to close (one closes, one
// is retried, one dead-lettered); an outcome event; dead letters from a
// delay topic and from the cancel topic.
func seedProbes(ctx context.Context, t *testing.T, a *aclCluster) {
	t.Helper()
	a.createTopics(ctx)
	table, _ := tiers.Parse(aclTiers)
	now := time.Now()
	deadline := func(id string, due time.Time) *kgo.Record {
		r, err := tiers.BuildRecord(tiers.DefaultPrefix, table, now, tiers.Task{ID: id, Due: due})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cancellation, err := tiers.BuildCancellation(tiers.DefaultPrefix, tiers.Cancellation{ID: "probe-cancelled", At: now.Add(time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	cancelTopic := tiers.CancelTopic(tiers.DefaultPrefix)
	recs := []*kgo.Record{
		cancellation,
		deadline("probe-due", now),
		deadline("probe-hop", now.Add(10*time.Second)),
		deadline("probe-cancelled", now.Add(500*time.Millisecond)),
		{Topic: tiers.Topic(tiers.DefaultPrefix, table.Smallest()), Key: []byte("probe-malformed")},
	}
	for _, id := range []string{"probe-ok", "probe-busy", "probe-refused"} {
		r := deadline(id, now)
		r.Topic = cancelTopic
		recs = append(recs, r)
	}
	ev := outcome.Event{V: 1, TaskID: "probe-ok", Kind: "order-timeout", Outcome: outcome.Closed, Topic: cancelTopic, DueMs: now.UnixMilli(), ClosedMs: now.UnixMilli()}
	recs = append(recs, ev.Record(tiers.OutcomesTopic(tiers.DefaultPrefix), now, nil))
	for _, src := range []struct{ id, topic string }{{"from-delay", tiers.Topic(tiers.DefaultPrefix, table.Smallest())}, {"from-cancel", cancelTopic}} {
		r := deadline(src.id, now)
		r.Topic = src.topic
		recs = append(recs, record.DeadLetter(r, tiers.DeadLetterTopic(tiers.DefaultPrefix), errors.New("close_failed: order locked"), now))
	}
	if err := a.admin.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(fmt.Errorf("seed the probes: %w", err))
	}
}
