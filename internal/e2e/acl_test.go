package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// aclRow is one row of the ACL table of docs/security.md: principal may do
// ops (comma-separated) on the resource of that type and name. A name that
// ends in * is a prefix.
type aclRow struct{ principal, resource, name, ops string }

// aclTable is the ACL table of docs/security.md, row for row, for the
// default topic prefix, groups and transactional id prefix: the least each
// principal needs (TestLeastPrivilege runs the pipeline with it, and
// TestEachGrantIsNeeded takes each grant away in turn).
// TestACLTableIsDocumented checks that the document says the same.
var aclTable = []aclRow{
	{"router", "topic", "hourglass.delay.*", "Read, Write"},
	{"router", "topic", "hourglass.cancel", "Write"},
	{"router", "topic", "hourglass.dlq", "Write"},
	{"router", "topic", "hourglass.outcomes", "Write"},
	{"router", "topic", "hourglass.cancellations", "Read"},
	{"router", "group", "hourglass-router", "Read"},
	{"canceller", "topic", "hourglass.cancel", "Read"},
	{"canceller", "topic", "hourglass.delay.*", "Write"},
	{"canceller", "topic", "hourglass.outcomes", "Write"},
	{"canceller", "topic", "hourglass.dlq", "Write"},
	{"canceller", "group", "hourglass-canceller", "Read"},
	{"recorder", "topic", "hourglass.outcomes", "Read"},
	{"recorder", "topic", "hourglass.delay.*", "Read"},
	{"recorder", "topic", "hourglass.cancellations", "Read"},
	{"recorder", "topic", "hourglass.dlq", "Read"},
	{"recorder", "group", "hourglass-recorder", "Read"},
	{"producer", "topic", "hourglass.delay.*", "Write"},
	{"cancel-writer", "topic", "hourglass.cancellations", "Write"},
	{"rescheduler", "topic", "hourglass.delay.*", "Write"},
	{"rescheduler", "topic", "hourglass.cancellations", "Write"},
	{"rescheduler", "transactional-id", "hourglass-reschedule-*", "Write"},
	{"topics-admin", "topic", "hourglass.*", "Create, Describe, DescribeConfigs"},
	{"status-reader", "topic", "hourglass.*", "Read"},
	{"dlq-reader", "topic", "hourglass.dlq", "Read"},
	{"dlq-replayer", "topic", "hourglass.dlq", "Read"},
	{"dlq-replayer", "topic", "hourglass.delay.*", "Write"},
	{"dlq-replayer", "topic", "hourglass.cancel", "Write"},
}

// aclTiers are the tiers of the ACL tests: short, so that deadlines fire
// within seconds. Their topics are hourglass.delay.200ms and .1s.
const aclTiers = "200ms,1s"

// aclAdmin is the superuser of an ACL cluster, for the test's own setup
// and reads.
const aclAdmin = "admin"

// secret is the SASL password of a principal.
func secret(principal string) string { return principal + "-secret" }

// operations returns the operations of r.
func (r aclRow) operations(t testing.TB) []kmsg.ACLOperation {
	var out []kmsg.ACLOperation
	for s := range strings.SplitSeq(r.ops, ",") {
		op, err := kmsg.ParseACLOperation(s)
		if err != nil {
			t.Fatalf("ACL table row %v: %v", r, err)
		}
		out = append(out, op)
	}
	return out
}

// acls returns the ACLs that allow r.
func (r aclRow) acls(t testing.TB) []kfake.ACL {
	rt, err := kmsg.ParseACLResourceType(r.resource)
	if err != nil {
		t.Fatalf("ACL table row %v: %v", r, err)
	}
	name, prefixed := strings.CutSuffix(r.name, "*")
	pattern := kmsg.ACLResourcePatternTypeLiteral
	if prefixed {
		pattern = kmsg.ACLResourcePatternTypePrefixed
	}
	var out []kfake.ACL
	for _, op := range r.operations(t) {
		out = append(out, kfake.ACL{Resource: rt, Name: name, Pattern: pattern, Operation: op, Allow: true})
	}
	return out
}

// principals returns the principals of aclTable, sorted.
func principals() []string {
	var out []string
	for _, r := range aclTable {
		out = append(out, r.principal)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// aclCluster is a broker of a test's own with SASL/SCRAM-SHA-256 and ACLs
// on: every principal of aclTable is a user with the grants of the rows the
// cluster was made with, and aclAdmin is a superuser.
type aclCluster struct {
	t     *testing.T
	c     *kfake.Cluster
	admin *kgo.Client
	adm   *kadm.Client
}

// newACLCluster starts an ACL cluster granting rows; it is closed when the
// test ends.
func newACLCluster(t *testing.T, rows []aclRow) *aclCluster {
	t.Helper()
	const mech = "SCRAM-SHA-256"
	grants := map[string][]kfake.ACL{}
	for _, r := range rows {
		grants[r.principal] = append(grants[r.principal], r.acls(t)...)
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.GroupMinSessionTimeout(groupMinSession), kfake.Superuser(mech, aclAdmin, secret(aclAdmin))}
	for _, p := range principals() {
		opts = append(opts, kfake.User(mech, p, secret(p), grants[p]...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	a := &aclCluster{t: t, c: c}
	t.Cleanup(c.Close) // after the clients' Close, registered below
	a.admin, err = kgo.NewClient(a.opts(aclAdmin)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.admin.Close)
	a.adm = kadm.NewClient(a.admin)
	return a
}

// opts are the options of a client of principal.
func (a *aclCluster) opts(principal string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(a.c.ListenAddrs()...),
		kgo.SASL(scram.Auth{User: principal, Pass: secret(principal)}.AsSha256Mechanism()),
	}
}

// as returns the command line args of `hourglass` with the flags that
// connect it to the cluster as principal.
func (a *aclCluster) as(principal string, args ...string) []string {
	return append(slices.Clone(args), "--brokers", a.c.ListenAddrs()[0],
		"--sasl-mechanism", "scram-sha-256", "--sasl-user", principal, "--sasl-password", secret(principal))
}

// createTopics creates the pipeline's topics with the default prefix and
// aclTiers, one partition each, as the superuser.
func (a *aclCluster) createTopics(ctx context.Context) {
	a.t.Helper()
	table, err := tiers.Parse(aclTiers)
	if err != nil {
		a.t.Fatal(err)
	}
	if _, err := topics.Ensure(ctx, a.adm, topics.Specs(topics.Default(tiers.DefaultPrefix, table), 1, -1), true); err != nil {
		a.t.Fatal(err)
	}
}

// waitGroup waits until group is stable with one member owning partitions,
// or the test has failed (a service stopped, say).
func (a *aclCluster) waitGroup(ctx context.Context, group string) error {
	return waitFor(ctx, a.t, func() bool {
		g := a.c.GroupInfo(group)
		return g != nil && g.State == "Stable" && len(g.Members) == 1 && g.Members[0].NumAssigned() > 0
	})
}

// runCmd runs `hourglass args...` as a process to its end, at most
// stopTimeout, and returns its stdout, its stderr and how it ended.
func runCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), execEnv+"=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// The child exits when its stdin closes (see TestMain); Wait closes it.
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// hasLine reports whether out has a line that holds every one of parts.
func hasLine(out string, parts ...string) bool { return lineWith(out, parts...) != "" }

// lineWith returns the first line of out that holds every one of parts, or
// "".
func lineWith(out string, parts ...string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(sc.Text(), p) }) {
			return sc.Text()
		}
	}
	return ""
}

// docACLTable returns the rows of the table under "## Kafka ACLs" in
// docs/security.md: its first four columns, without the backquotes.
func docACLTable(t *testing.T) []aclRow {
	t.Helper()
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Kafka ACLs\n")
	if !ok {
		t.Fatal(`docs/security.md has no "## Kafka ACLs" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []aclRow
	for line := range strings.SplitSeq(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 4 || strings.HasPrefix(cells[0], "-") || strings.TrimSpace(cells[0]) == "principal" {
			continue
		}
		cell := func(i int) string { return strings.Trim(strings.TrimSpace(cells[i]), "`") }
		rows = append(rows, aclRow{cell(0), cell(1), cell(2), cell(3)})
	}
	return rows
}

// TestACLTableIsDocumented: the ACL table of docs/security.md is the one
// the tests run the pipeline with.
func TestACLTableIsDocumented(t *testing.T) {
	doc := docACLTable(t)
	if !slices.Equal(doc, aclTable) {
		t.Errorf("docs/security.md lists the ACLs\n%s\nthe tests use\n%s", formatRows(doc), formatRows(aclTable))
	}
}

func formatRows(rows []aclRow) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("  | " + strings.Join([]string{r.principal, r.resource, r.name, r.ops}, " | ") + " |\n")
	}
	return b.String()
}

// waitLine waits, at most stopTimeout, until pr's output has a line that
// holds every one of parts.
func waitLine(t *testing.T, pr *proc, parts ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !hasLine(pr.out.String(), parts...) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
