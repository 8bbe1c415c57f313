package deploy

// Tests of the chart's values: helm lint, and the values the schema and the
// templates refuse.

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestChartLint runs helm lint --strict with the defaults and every ci/
// values file.
func TestChartLint(t *testing.T) {
	t.Parallel()
	for _, values := range chartScenarios {
		t.Run(scenarioName(values), func(t *testing.T) {
			args := []string{"lint", chartDir, "--strict", "--kube-version", chartKubeVersion, "--namespace", chartNamespace}
			if values != "" {
				args = append(args, "--values", filepath.Join(chartDir, values))
			}
			if _, err := helm(t, args...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestChartRejects checks that bad values fail the render with a message
// naming the problem: the schema rejects unknown keys and wrong types, the
// templates reject settings that cannot work together.
func TestChartRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"unknown top-level key", []string{"replicas=3"}, "additional properties 'replicas' not allowed"},
		{"unknown nested key", []string{"router.replicaz=3"}, "at '/router': additional properties 'replicaz' not allowed"},
		{"unknown key in a closer entry", []string{"canceller.closers.x.sqll.driver=postgres"}, "additional properties 'sqll' not allowed"},
		{"string for an integer", []string{"topics.partitions=six"}, "at '/topics/partitions': got string, want integer"},
		{"number for a duration", []string{"router.shutdownTimeout=20"}, "at '/router/shutdownTimeout': got number, want string"},
		{"not a duration", []string{"canceller.retryBackoff=soon"}, "/canceller/retryBackoff"},
		{"string for a boolean", []string{"recorder.enabled=yes"}, "at '/recorder/enabled': got string, want boolean"},
		{"unknown enum value", []string{"kafka.sasl.mechanism=gssapi"}, "/kafka/sasl/mechanism"},
		{"replication factor 0", []string{"topics.replicationFactor=0"}, "/topics/replicationFactor"},
		{"more routers than partitions", []string{"router.replicas=7"}, "router.replicas (7) is above topics.partitions (6)"},
		{"autoscaling beyond partitions", []string{"canceller.autoscaling.enabled=true", "canceller.autoscaling.maxReplicas=12"}, "canceller.autoscaling.maxReplicas (12) is above topics.partitions (6)"},
		{"sasl without its secret", []string{"kafka.sasl.mechanism=plain", "kafka.sasl.user=u"}, "kafka.sasl.mechanism is plain but kafka.sasl.existingSecret is empty"},
		{"oauthbearer without a token", []string{"kafka.sasl.mechanism=OAUTHBEARER"}, "kafka.sasl.mechanism is OAUTHBEARER: set one of kafka.sasl.oauth.serviceAccountTokenAudience"},
		{"oauthbearer with two tokens", []string{"kafka.sasl.mechanism=OAUTHBEARER", "kafka.sasl.oauth.serviceAccountTokenAudience=kafka", "kafka.sasl.oauth.existingSecret=t"}, "set one of kafka.sasl.oauth.serviceAccountTokenAudience"},
		{"projected token too short-lived", []string{"kafka.sasl.oauth.serviceAccountTokenExpirationSeconds=60"}, "/kafka/sasl/oauth/serviceAccountTokenExpirationSeconds"},
		{"msk iam without credentials", []string{"kafka.sasl.mechanism=AWS_MSK_IAM", "kafka.tls.enabled=true"}, "kafka.sasl.mechanism is AWS_MSK_IAM but kafka.sasl.aws.existingSecret is empty"},
		{"msk iam without tls", []string{"kafka.sasl.mechanism=AWS_MSK_IAM", "kafka.sasl.aws.existingSecret=c"}, "kafka.sasl.mechanism is AWS_MSK_IAM, which needs TLS: set kafka.tls.enabled"},
		{"client certificate without key", []string{"kafka.tls.existingSecret=s", "kafka.tls.certKey=tls.crt"}, "kafka.tls: certKey and keyKey go together"},
		{"reconcile without closers", []string{"reconcile.enabled=true"}, `reconcile.kind "order-timeout" is not a kind of canceller.closers`},
		{"reconcile of an http closer", []string{"reconcile.enabled=true", "canceller.closers.order-timeout.http.url=https://x"}, "has no sql closer"},
		{"reconcile without a deadline", []string{"reconcile.enabled=true", "canceller.closers.order-timeout.sql.driver=postgres"}, "sql.reconcile.deadline is not set"},
		{"allowed targets joined by hand", []string{`router.allowedTargets[0]=a.cancel\,b.cancel`}, "/router/allowedTargets/0"},
		{"timer bytes below 1 MiB", []string{"router.timerBytes=1000"}, "/router/timerBytes"},
		{"router memory below its byte limits", []string{"router.resources.limits.memory=128Mi"}, "router.resources.limits.memory 128Mi (GOMEMLIMIT 115MiB) is below what a router may hold"},
		{"cancellation grace 0", []string{"router.cancellationGrace=0"}, "/router/cancellationGrace"},
		{"store size limit not a quantity", []string{"router.cancellationsStore.sizeLimit=lots"}, "/router/cancellationsStore/sizeLimit"},
		{"claim size not a quantity", []string{"router.cancellationsStore.persistence.size=2GB"}, "/router/cancellationsStore/persistence/size"},
		{"claims without an access mode", []string{"router.cancellationsStore.persistence.accessModes=null"}, "at '/router/cancellationsStore/persistence': missing property 'accessModes'"},
		{"read-only claims", []string{"router.cancellationsStore.persistence.accessModes[0]=ReadOnlyMany"}, "/router/cancellationsStore/persistence/accessModes/0"},
		{"unknown retention policy", []string{"router.cancellationsStore.persistence.retentionPolicy.whenScaled=Keep"}, "/router/cancellationsStore/persistence/retentionPolicy/whenScaled"},
		{"unknown store key", []string{"router.cancellationsStore.persistence.storageClassName=fast"}, "additional properties 'storageClassName' not allowed"},
		{"extra volume over the store", []string{"router.extraVolumes[0].name=cancellations", "router.extraVolumes[0].emptyDir.medium=Memory"}, `router.extraVolumes: name "cancellations" is taken by the chart's own volumes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderChart(t, "", tc.set...)
			if err == nil {
				t.Fatalf("--set %v rendered; want an error containing %q", tc.set, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("--set %v: error does not contain %q:\n%v", tc.set, tc.want, err)
			}
		})
	}
}
