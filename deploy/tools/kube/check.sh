#!/usr/bin/env bash
# The chart against a real Kubernetes API, on loopback, with nothing but Go:
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler built
# from the Go module proxy (cmd/kube, this module), and kwok, which plays
# the kubelet of a fake node so that pods become Running and Ready (and Job
# pods complete) without containers. It
#   1. server-side dry-runs every manifest of helm template (admission, the
#      API's own validation, the Prometheus Operator CRDs' schemas, Pod
#      Security "restricted" on the namespace);
#   2. helm install --wait with ci/all-values.yaml (every feature, both
#      hook Jobs), checks that the router and canceller StatefulSets have
#      all their pods (<name>-0, -1, ...) ready, and the claims of their
#      volumeClaimTemplates bound, helm upgrade --wait (the hooks again, a
#      rolling update of the StatefulSets), helm uninstall.
# Claims (ci/persistence-values.yaml) bind to local PersistentVolumes made
# up front on the kwok node, through a default StorageClass without a
# provisioner.
# Usage: deploy/tools/kube/check.sh [values file, default ci/all-values.yaml]
# With UPGRADE_FROM=<git revision>, the release is first installed from
# that revision's chart (and its own values file of the same name), then
# upgraded to this one: the upgrade path of an existing release.
set -euo pipefail

K8S_VERSION=v1.36.3                 # k8s.io/kubernetes, as in scripts/k8s-tools.sh
KWOK_VERSION=v0.8.0                 # sigs.k8s.io/kwok
PROMETHEUS_OPERATOR_VERSION=v0.85.0 # the CRDs, as in scripts/k8s-tools.sh
ETCD_PORT=23790
APISERVER_PORT=26443

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
bin="$root/.tools/bin"
chart="$root/deploy/helm/hourglass"
values="${1:-ci/all-values.yaml}"
"$root/scripts/k8s-tools.sh" >/dev/null # helm

# Build the control plane once per version (its first build takes several
# minutes on two cores), with the version the API server reports.
stamp="$bin/.kube-$K8S_VERSION"
if [ ! -x "$bin/kube" ] || [ ! -f "$stamp" ] || [ "$here/go.mod" -nt "$stamp" ] || [ "$here/cmd/kube/main.go" -nt "$stamp" ]; then
  echo "kube-check: building etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl $K8S_VERSION into .tools/bin/kube"
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
  done
  (cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$bin/kube" ./cmd/kube)
  touch "$stamp"
fi
if [ "$(go version -m "$bin/kwok" 2>/dev/null | awk '$1 == "mod" { print $3 }')" != "$KWOK_VERSION" ]; then
  echo "kube-check: installing kwok $KWOK_VERSION into .tools/bin"
  GOBIN="$bin" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
fi
module_dir() {
  (cd "$root/deploy/tools" && go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
}
crds=$(module_dir "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION")/example/prometheus-operator-crd
# kwok's own "fast" stages: nodes become Ready and renew their leases, pods
# become Running and Ready at once, pods of Jobs complete.
stages=$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION")/kustomize/stage
kwok_config=()
for f in "$stages"/node/fast/node-initialize.yaml "$stages"/node/heartbeat-with-lease/*.yaml "$stages"/pod/fast/pod-*.yaml; do
  kwok_config+=(--config "$f")
done

work=$(mktemp -d)
pids=()
cleanup() {
  local status=$? i pid
  # Stop in reverse order (etcd last), each within 10s.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid=${pids[i]}
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$status" -ne 0 ]; then
    echo "kube-check: FAILED; the last lines of each component's log:" >&2
    for f in "$work"/*.log; do echo "== $f" >&2; tail -n 15 "$f" >&2; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
start() { # name command...
  local name=$1; shift
  "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
}

kubeconfig="$work/kubeconfig"
cat >"$kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$APISERVER_PORT", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: kube-check}}]
contexts: [{name: local, context: {cluster: local, user: admin}}]
current-context: local
EOF
echo "kube-check,admin,admin,system:masters" >"$work/tokens.csv"
"$bin/kube" sa-key "$work/sa.key"
export KUBECONFIG="$kubeconfig"
kubectl() { "$bin/kube" kubectl "$@"; }

# wait_for WHAT SECONDS COMMAND...: poll until the command succeeds.
wait_for() {
  local what=$1 limit=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "kube-check: $what not ready after ${limit}s" >&2
      return 1
    fi
    sleep 1
  done
}

echo "kube-check: starting etcd and kube-apiserver $K8S_VERSION on 127.0.0.1:$APISERVER_PORT"
start etcd "$bin/kube" etcd --dir "$work/etcd" --listen "127.0.0.1:$ETCD_PORT" --peer "127.0.0.1:$((ETCD_PORT + 10))"
start apiserver "$bin/kube" apiserver \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
  --cert-dir="$work/certs" --token-auth-file="$work/tokens.csv" --authorization-mode=RBAC \
  --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$work/sa.key" --service-account-signing-key-file="$work/sa.key" \
  --service-cluster-ip-range=10.96.0.0/16
wait_for "kube-apiserver" 120 kubectl get --raw /readyz
start controller-manager "$bin/kube" controller-manager --kubeconfig="$kubeconfig" \
  --leader-elect=false --bind-address=127.0.0.1 --secure-port=0 \
  --service-account-private-key-file="$work/sa.key" --use-service-account-credentials=false
start scheduler "$bin/kube" scheduler --kubeconfig="$kubeconfig" --leader-elect=false --bind-address=127.0.0.1 --secure-port=0
start kwok "$bin/kwok" --kubeconfig="$kubeconfig" --manage-all-nodes=true --node-lease-duration-seconds=40 "${kwok_config[@]}"
echo "kube-check: cluster up: $(kubectl version -o json | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | tail -1)"

kubectl apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-0
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: kwok-node-0, kubernetes.io/os: linux, type: kwok, topology.kubernetes.io/zone: zone-a}
status:
  allocatable: {cpu: "32", memory: 128Gi, pods: "110"}
  capacity: {cpu: "32", memory: 128Gi, pods: "110"}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-priority}
value: 1000
---
apiVersion: v1
kind: Namespace
metadata:
  name: hourglass
  labels:
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/enforce-version: latest
EOF
# The default StorageClass and the volumes of the claims of StatefulSets'
# volumeClaimTemplates: no provisioner, so the volumes exist up front, on
# the kwok node; a claim binds to one when its pod is scheduled.
{
  cat <<'EOF'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: kube-check-local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
EOF
  for i in $(seq 0 11); do
    cat <<EOF
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: kube-check-pv-$i}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: kube-check-local
  local: {path: /mnt/kube-check/pv-$i}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [kwok-node-0]}]
EOF
  done
} | kubectl apply -f - >/dev/null
kubectl apply --server-side -f "$crds/monitoring.coreos.com_servicemonitors.yaml" -f "$crds/monitoring.coreos.com_prometheusrules.yaml" >/dev/null
wait_for "the ServiceMonitor CRD" 60 kubectl get servicemonitors -A
wait_for "the default ServiceAccount" 60 kubectl -n hourglass get serviceaccount default
wait_for "the kwok node" 60 kubectl wait --for=condition=Ready node/kwok-node-0 --timeout=1s

helm=("$bin/helm" --kubeconfig "$kubeconfig" --namespace hourglass)
# The test pod needs the release's ServiceAccount to exist even in a dry
# run: it is dry-run after the install.
echo "kube-check: server-side dry run of helm template -f $values"
"${helm[@]}" template hg "$chart" -f "$chart/$values" --set helmTest.enabled=false |
  kubectl -n hourglass apply --dry-run=server -f - | sed 's/^/  /'

if [ -n "${UPGRADE_FROM:-}" ]; then
  old="$work/old-chart"
  mkdir -p "$old"
  git -C "$root" archive "$UPGRADE_FROM" deploy/helm/hourglass | tar -x -C "$old"
  echo "kube-check: helm install --wait the chart of $UPGRADE_FROM -f $values"
  "${helm[@]}" install hg "$old/deploy/helm/hourglass" -f "$old/deploy/helm/hourglass/$values" --wait --timeout 5m >/dev/null
  echo "kube-check: helm upgrade --wait to this chart -f $values"
  "${helm[@]}" upgrade hg "$chart" -f "$chart/$values" --wait --timeout 5m >/dev/null
else
  echo "kube-check: helm install --wait -f $values"
  "${helm[@]}" install hg "$chart" -f "$chart/$values" --wait --timeout 5m
fi
kubectl -n hourglass get statefulsets,deployments,pods,services,jobs,cronjobs,hpa,pdb,networkpolicies,servicemonitors,prometheusrules,persistentvolumeclaims | sed 's/^/  /'
# check_statefulsets: every StatefulSet of the release has as many ready pods
# as it wants (an autoscaler may have raised that after --wait), named
# <statefulset>-<ordinal>, each with its pod name as HOURGLASS_INSTANCE_ID,
# and each with its claims (<template>-<statefulset>-<ordinal>) bound.
ready_replicas() { # statefulset n
  test "$(kubectl -n hourglass get statefulset "$1" -o jsonpath='{.status.readyReplicas}')" = "$2"
}
claim_bound() { # claim
  test "$(kubectl -n hourglass get persistentvolumeclaim "$1" -o jsonpath='{.status.phase}')" = Bound
}
check_statefulsets() {
  local sets sts n names want i tpl claims
  sets=$(kubectl -n hourglass get statefulsets -l app.kubernetes.io/instance=hg -o jsonpath='{.items[*].metadata.name}')
  if [ -z "$sets" ]; then
    echo "kube-check: no StatefulSets in the release" >&2
    return 1
  fi
  for sts in $sets; do
    if ! kubectl -n hourglass rollout status "statefulset/$sts" --timeout=120s >/dev/null; then
      echo "kube-check: statefulset/$sts did not become ready" >&2
      return 1
    fi
    n=$(kubectl -n hourglass get statefulset "$sts" -o jsonpath='{.spec.replicas}')
    wait_for "$n ready pods of statefulset/$sts" 120 ready_replicas "$sts" "$n"
    names=$(kubectl -n hourglass get pods -l "app.kubernetes.io/instance=hg,app.kubernetes.io/component=${sts##*-}" \
      -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
    want=$(for ((i = 0; i < n; i++)); do echo "$sts-$i"; done | sort)
    if [ "$names" != "$want" ]; then
      echo "kube-check: statefulset/$sts has pods [$(echo $names)], want [$(echo $want)]" >&2
      return 1
    fi
    if [ "$(kubectl -n hourglass get pod "$sts-0" -o jsonpath='{.spec.containers[0].env[?(@.name=="HOURGLASS_INSTANCE_ID")].valueFrom.fieldRef.fieldPath}')" != metadata.name ]; then
      echo "kube-check: pod $sts-0 does not take HOURGLASS_INSTANCE_ID from its name" >&2
      return 1
    fi
    claims=""
    for tpl in $(kubectl -n hourglass get statefulset "$sts" -o jsonpath='{.spec.volumeClaimTemplates[*].metadata.name}'); do
      for ((i = 0; i < n; i++)); do
        wait_for "claim $tpl-$sts-$i" 120 claim_bound "$tpl-$sts-$i"
        claims="$claims $tpl-$sts-$i"
      done
    done
    echo "  statefulset/$sts: $n of $n pods ready: $(echo $names)${claims:+; claims bound:$claims}"
  done
}
check_statefulsets
# helm test itself would wait forever: kwok runs the test pod, it never
# exits. Its manifest goes through the API's admission instead.
"${helm[@]}" template hg "$chart" -f "$chart/$values" --show-only templates/tests/test-topics.yaml |
  kubectl -n hourglass apply --dry-run=server -f - | sed 's/^/  /'
# The namespace enforces Pod Security "restricted": a pod the chart renders
# with a weaker security context is refused.
if out=$("${helm[@]}" template hg "$chart" -f "$chart/$values" --show-only templates/tests/test-topics.yaml \
    --set securityContext.allowPrivilegeEscalation=true | kubectl -n hourglass apply --dry-run=server -f - 2>&1) ||
    ! grep -q 'violates PodSecurity "restricted' <<<"$out"; then
  echo "kube-check: a pod with allowPrivilegeEscalation=true was not refused by Pod Security admission: $out" >&2
  exit 1
fi
echo "  Pod Security admission refuses the same pod with allowPrivilegeEscalation=true"
echo "kube-check: helm upgrade --wait (the hooks run again)"
"${helm[@]}" upgrade hg "$chart" -f "$chart/$values" --set router.commitInterval=2s --wait --timeout 5m >/dev/null
"${helm[@]}" history hg | sed 's/^/  /'
check_statefulsets
echo "kube-check: helm uninstall --wait"
"${helm[@]}" uninstall hg --wait --timeout 2m >/dev/null
echo "kube-check: ok"
