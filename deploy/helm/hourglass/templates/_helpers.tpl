{{/*
Names and labels.
*/}}
{{- define "hourglass.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hourglass.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The name of a component's resources: <fullname>-<component>. */}}
{{- define "hourglass.componentName" -}}
{{- printf "%s-%s" (include "hourglass.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hourglass.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of a component: dict "root" $ "component" "router". */}}
{{- define "hourglass.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hourglass.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Labels of a component's resources: dict "root" $ "component" "router". */}}
{{- define "hourglass.labels" -}}
helm.sh/chart: {{ include "hourglass.chart" .root }}
{{ include "hourglass.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: hourglass
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "hourglass.image" -}}
{{- $img := .Values.image -}}
{{- $repo := $img.repository -}}
{{- with $img.registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" .) $repo }}{{ end -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{- define "hourglass.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "hourglass.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
The ServiceAccount of hook pods (topics, migration). Hooks run before the
release's own resources exist, so a ServiceAccount the chart creates is not
there yet: they use it only when it is an existing one.
*/}}
{{- define "hourglass.hookServiceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
default
{{- else -}}
{{- include "hourglass.serviceAccountName" . -}}
{{- end -}}
{{- end -}}

{{/*
hourglass.seconds turns a Go duration ("20s", "1m30s", "500ms") into whole
seconds, rounded up.
*/}}
{{- define "hourglass.seconds" -}}
{{- $total := 0.0 -}}
{{- $unit := dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001 "us" 0.000001 "µs" 0.000001 "ns" 0.000000001 -}}
{{- range $part := regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" (toString .) -1 -}}
{{- $n := regexFind "^[0-9]+(\\.[0-9]+)?" $part | float64 -}}
{{- $u := regexReplaceAll "^[0-9]+(\\.[0-9]+)?" $part "" -}}
{{- $total = addf $total (mulf $n (get $unit $u)) -}}
{{- end -}}
{{- ceil $total | int -}}
{{- end -}}

{{/* terminationGracePeriodSeconds of a component: its shutdown timeout plus the margin. */}}
{{- define "hourglass.gracePeriod" -}}
{{- add (include "hourglass.seconds" .values.shutdownTimeout | int) (.root.Values.terminationGraceExtraSeconds | int) -}}
{{- end -}}

{{/*
Environment. Each hourglass.env.* template renders a YAML map of HOURGLASS_*
variables (strings); ConfigMaps hold them, and hook pods, which run before
the ConfigMaps exist, get them inline.
*/}}

{{/* Kafka connection and topic layout, shared by everything that talks to Kafka. */}}
{{- define "hourglass.env.kafka" -}}
{{- $v := .Values -}}
{{- $env := dict -}}
{{- $_ := set $env "HOURGLASS_BROKERS" (join "," $v.kafka.brokers) -}}
{{- with $v.kafka.tls -}}
{{- if or .enabled .existingSecret -}}
{{- $_ := set $env "HOURGLASS_TLS" "true" -}}
{{- if .serverName -}}{{- $_ := set $env "HOURGLASS_TLS_SERVER_NAME" .serverName -}}{{- end -}}
{{- if and .existingSecret .caKey -}}{{- $_ := set $env "HOURGLASS_TLS_CA_FILE" "/etc/hourglass/kafka-tls/ca.crt" -}}{{- end -}}
{{- if and .existingSecret .certKey -}}
{{- $_ := set $env "HOURGLASS_TLS_CERT_FILE" "/etc/hourglass/kafka-tls/tls.crt" -}}
{{- $_ := set $env "HOURGLASS_TLS_KEY_FILE" "/etc/hourglass/kafka-tls/tls.key" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with $v.kafka.sasl -}}
{{- if .mechanism -}}
{{- $_ := set $env "HOURGLASS_SASL_MECHANISM" .mechanism -}}
{{- if eq (include "hourglass.saslKind" $) "password" -}}
{{- $_ := set $env "HOURGLASS_SASL_USER" .user -}}
{{- $_ := set $env "HOURGLASS_SASL_PASSWORD_FILE" "/etc/hourglass/kafka-sasl/password" -}}
{{- else if eq (include "hourglass.saslKind" $) "oauth" -}}
{{- $_ := set $env "HOURGLASS_SASL_OAUTH_TOKEN_FILE" "/etc/hourglass/kafka-sasl/token" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := set $env "HOURGLASS_TOPIC_PREFIX" $v.topics.prefix -}}
{{- $_ := set $env "HOURGLASS_PARTITIONS" ($v.topics.partitions | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_REPLICATION_FACTOR" ($v.topics.replicationFactor | int64 | toString) -}}
{{- toYaml $env -}}
{{- end -}}

{{/* What `hourglass topics` reads: the connection and the tiers. */}}
{{- define "hourglass.env.topics" -}}
{{- $env := include "hourglass.env.kafka" . | fromYaml -}}
{{- $_ := set $env "HOURGLASS_TIERS" (join "," .Values.topics.tiers) -}}
{{- toYaml $env -}}
{{- end -}}

{{/* What every service has: dict "root" $ "component" "router" "values" .Values.router. */}}
{{- define "hourglass.env.service" -}}
{{- $v := .root.Values -}}
{{- $c := .values -}}
{{- $env := include "hourglass.env.kafka" .root | fromYaml -}}
{{- $_ := set $env "HOURGLASS_LOG_LEVEL" $v.log.level -}}
{{- $_ := set $env "HOURGLASS_LOG_FORMAT" $v.log.format -}}
{{- $_ := set $env "HOURGLASS_CREATE_TOPICS" (toString $v.topics.createAtStart) -}}
{{- $_ := set $env "HOURGLASS_HTTP_ADDR" (printf ":%d" ($c.port | int)) -}}
{{- $_ := set $env "HOURGLASS_GROUP" $c.group -}}
{{- $_ := set $env "HOURGLASS_SHUTDOWN_TIMEOUT" $c.shutdownTimeout -}}
{{- $_ := set $env "HOURGLASS_SESSION_TIMEOUT" $c.sessionTimeout -}}
{{- toYaml $env -}}
{{- end -}}

{{- define "hourglass.env.router" -}}
{{- $v := .Values -}}
{{- $r := $v.router -}}
{{- $env := include "hourglass.env.service" (dict "root" . "component" "router" "values" $r) | fromYaml -}}
{{- $_ := set $env "HOURGLASS_TIERS" (join "," $v.topics.tiers) -}}
{{- if $r.target }}{{ $_ := set $env "HOURGLASS_TARGET" $r.target }}{{ end -}}
{{- if $r.dlqTopic }}{{ $_ := set $env "HOURGLASS_DLQ_TOPIC" $r.dlqTopic }}{{ end -}}
{{- $_ := set $env "HOURGLASS_MAX_DELAY" $r.maxDelay -}}
{{- $_ := set $env "HOURGLASS_TIMER_CAPACITY" ($r.timerCapacity | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_MAX_HELD" ($r.maxHeld | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_MAX_HELD_PER_PARTITION" ($r.maxHeldPerPartition | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_FETCH_PARTITION_BYTES" ($r.fetchPartitionBytes | int64 | toString) -}}
{{- if $r.allowedTargets }}{{ $_ := set $env "HOURGLASS_ALLOWED_TARGETS" (join "," $r.allowedTargets) }}{{ end -}}
{{- if $v.canceller.outcomesTopic }}{{ $_ := set $env "HOURGLASS_OUTCOMES_TOPIC" $v.canceller.outcomesTopic }}{{ end -}}
{{- if $r.cancellationsTopic }}{{ $_ := set $env "HOURGLASS_CANCELLATIONS_TOPIC" $r.cancellationsTopic }}{{ end -}}
{{- $_ := set $env "HOURGLASS_CANCELLATIONS_DIR" (include "hourglass.cancellationsDir" .) -}}
{{- $_ := set $env "HOURGLASS_CANCELLATION_GRACE" $r.cancellationGrace -}}
{{- $_ := set $env "HOURGLASS_DEFAULT_KIND" $v.canceller.defaultKind -}}
{{- $_ := set $env "HOURGLASS_TIMER_BYTES" ($r.timerBytes | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_MAX_HELD_BYTES" ($r.maxHeldBytes | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_MAX_HELD_BYTES_PER_PARTITION" ($r.maxHeldBytesPerPartition | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_COMMIT_INTERVAL" $r.commitInterval -}}
{{- $_ := set $env "HOURGLASS_REVOKE_TIMEOUT" $r.revokeTimeout -}}
{{- include "hourglass.extraEnv" (dict "env" $env "extra" $r.extraEnv "where" "router") -}}
{{- toYaml $env -}}
{{- end -}}

{{- define "hourglass.env.canceller" -}}
{{- $v := .Values -}}
{{- $c := $v.canceller -}}
{{- $env := include "hourglass.env.service" (dict "root" . "component" "canceller" "values" $c) | fromYaml -}}
{{- $_ := set $env "HOURGLASS_TIERS" (join "," $v.topics.tiers) -}}
{{- if $c.topics }}{{ $_ := set $env "HOURGLASS_TOPICS" (join "," $c.topics) }}{{ end -}}
{{- if $c.outcomesTopic }}{{ $_ := set $env "HOURGLASS_OUTCOMES_TOPIC" $c.outcomesTopic }}{{ end -}}
{{- if $c.dlqTopic }}{{ $_ := set $env "HOURGLASS_DLQ_TOPIC" $c.dlqTopic }}{{ end -}}
{{- $_ := set $env "HOURGLASS_DEFAULT_KIND" $c.defaultKind -}}
{{- if $c.closers }}{{ $_ := set $env "HOURGLASS_CLOSERS" "/etc/hourglass/closers/closers.yaml" }}{{ end -}}
{{- $_ := set $env "HOURGLASS_CLOSE_TIMEOUT" $c.closeTimeout -}}
{{- $_ := set $env "HOURGLASS_MAX_IN_FLIGHT" ($c.maxInFlight | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_RATE_LIMIT" (toString $c.rateLimit) -}}
{{- $_ := set $env "HOURGLASS_RATE_BURST" ($c.rateBurst | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_MAX_ATTEMPTS" ($c.maxAttempts | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_RETRY_BACKOFF" $c.retryBackoff -}}
{{- $_ := set $env "HOURGLASS_RETRY_BACKOFF_MAX" $c.retryBackoffMax -}}
{{- $_ := set $env "HOURGLASS_MAX_POLL_RECORDS" ($c.maxPollRecords | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_COMMIT_INTERVAL" $c.commitInterval -}}
{{- include "hourglass.extraEnv" (dict "env" $env "extra" $c.extraEnv "where" "canceller") -}}
{{- toYaml $env -}}
{{- end -}}

{{/* ClickHouse connection, shared by the recorder and the migration Job. */}}
{{- define "hourglass.env.clickhouse" -}}
{{- $ch := .Values.recorder.clickhouse -}}
{{- $env := dict -}}
{{- $_ := set $env "HOURGLASS_CLICKHOUSE_ADDR" $ch.addr -}}
{{- $_ := set $env "HOURGLASS_CLICKHOUSE_DATABASE" $ch.database -}}
{{- $_ := set $env "HOURGLASS_CLICKHOUSE_USER" $ch.user -}}
{{- if $ch.existingSecret }}{{ $_ := set $env "HOURGLASS_CLICKHOUSE_PASSWORD_FILE" "/etc/hourglass/clickhouse-password/password" }}{{ end -}}
{{- with $ch.tls -}}
{{- if or .enabled .existingSecret -}}
{{- $_ := set $env "HOURGLASS_CLICKHOUSE_TLS" "true" -}}
{{- if .serverName }}{{ $_ := set $env "HOURGLASS_CLICKHOUSE_TLS_SERVER_NAME" .serverName }}{{ end -}}
{{- if and .existingSecret .caKey }}{{ $_ := set $env "HOURGLASS_CLICKHOUSE_TLS_CA_FILE" "/etc/hourglass/clickhouse-tls/ca.crt" }}{{ end -}}
{{- if and .existingSecret .certKey -}}
{{- $_ := set $env "HOURGLASS_CLICKHOUSE_TLS_CERT_FILE" "/etc/hourglass/clickhouse-tls/tls.crt" -}}
{{- $_ := set $env "HOURGLASS_CLICKHOUSE_TLS_KEY_FILE" "/etc/hourglass/clickhouse-tls/tls.key" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $env -}}
{{- end -}}

{{- define "hourglass.env.recorder" -}}
{{- $r := .Values.recorder -}}
{{- $env := include "hourglass.env.service" (dict "root" . "component" "recorder" "values" $r) | fromYaml -}}
{{- $env = merge $env (include "hourglass.env.clickhouse" . | fromYaml) -}}
{{- if $r.outcomesTopic }}{{ $_ := set $env "HOURGLASS_OUTCOMES_TOPIC" $r.outcomesTopic }}{{ end -}}
{{- $_ := set $env "HOURGLASS_INDEX" (toString $r.index) -}}
{{- $_ := set $env "HOURGLASS_BATCH_ROWS" ($r.batchRows | int64 | toString) -}}
{{- $_ := set $env "HOURGLASS_FLUSH_INTERVAL" $r.flushInterval -}}
{{- $_ := set $env "HOURGLASS_INSERT_TIMEOUT" $r.insertTimeout -}}
{{- $_ := set $env "HOURGLASS_MIGRATE" (toString (and $r.migrate (not $r.migrationJob.enabled))) -}}
{{- include "hourglass.extraEnv" (dict "env" $env "extra" $r.extraEnv "where" "recorder") -}}
{{- toYaml $env -}}
{{- end -}}

{{/*
hourglass.extraEnv adds a component's extraEnv to its env map (dict "env"
$env "extra" .extraEnv "where" "router"). A variable the chart sets itself
is refused instead of silently replaced: HOURGLASS_INSTANCE_ID above all,
which must differ between pods.
*/}}
{{- define "hourglass.extraEnv" -}}
{{- $env := .env -}}
{{- $where := .where -}}
{{- range $k, $val := .extra -}}
{{- if eq $k "HOURGLASS_INSTANCE_ID" -}}
{{- fail (printf "%s.extraEnv.%s: the chart gives each pod its own (the pod name); one value for every pod would make them share a group instance id" $where $k) -}}
{{- else if eq $k "HOURGLASS_OUTCOMES_KEY_FILE" -}}
{{- fail (printf "%s.extraEnv.%s: set outcomesKey instead (the chart mounts the key)" $where $k) -}}
{{- else if hasKey $env $k -}}
{{- fail (printf "%s.extraEnv.%s: the chart sets this variable from its own values (values.yaml); set that key instead" $where $k) -}}
{{- end -}}
{{- if not (kindIs "map" $val) -}}
{{- $_ := set $env $k (toString $val) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
hourglass.extraEnvFrom is the container env list of a component's extraEnv
entries that are {valueFrom: ...} (the plain strings go to its ConfigMap).
*/}}
{{- define "hourglass.extraEnvFrom" -}}
{{- range $k, $val := . }}
{{- if kindIs "map" $val }}
- name: {{ $k }}
  valueFrom:
    {{- toYaml $val.valueFrom | nindent 4 }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
hourglass.probe is a container probe: the chart's default (dict "default"
$probe "override" $c.probes.liveness) with the component's override
merged over it. An override with its own handler (exec, grpc, tcpSocket)
replaces the httpGet.
*/}}
{{- define "hourglass.probe" -}}
{{- $p := deepCopy .default -}}
{{- $o := .override | default dict -}}
{{- if or $o.exec $o.grpc $o.tcpSocket $o.httpGet }}{{ $_ := unset $p "httpGet" }}{{ end -}}
{{- toYaml (mergeOverwrite $p (deepCopy $o)) -}}
{{- end -}}

{{/* An env map (YAML text) as a container's env list. */}}
{{- define "hourglass.envList" -}}
{{- range $k, $v := fromYaml . }}
- name: {{ $k }}
  value: {{ toString $v | quote }}
{{- end }}
{{- end -}}

{{/*
Volumes and mounts of the Kafka TLS files and the SASL password, for every
pod that talks to Kafka.
*/}}
{{- define "hourglass.kafkaVolumes" -}}
{{- with .Values.kafka.tls }}
{{- if .existingSecret }}
- name: kafka-tls
  secret:
    secretName: {{ .existingSecret }}
    defaultMode: 0440
    items:
      {{- if .caKey }}
      - {key: {{ .caKey | quote }}, path: ca.crt}
      {{- end }}
      {{- if .certKey }}
      - {key: {{ .certKey | quote }}, path: tls.crt}
      - {key: {{ .keyKey | quote }}, path: tls.key}
      {{- end }}
{{- end }}
{{- end }}
{{- $kind := include "hourglass.saslKind" . }}
{{- with .Values.kafka.sasl }}
{{- if eq $kind "password" }}
- name: kafka-sasl
  secret:
    secretName: {{ .existingSecret }}
    defaultMode: 0440
    items:
      - {key: {{ .passwordKey | quote }}, path: password}
{{- else if eq $kind "oauth" }}
{{- /* The kubelet refreshes both sources in place; each authentication reads the file again. */}}
- name: kafka-sasl
  projected:
    defaultMode: 0440
    sources:
      {{- if .oauth.serviceAccountTokenAudience }}
      - serviceAccountToken:
          audience: {{ .oauth.serviceAccountTokenAudience | quote }}
          expirationSeconds: {{ .oauth.serviceAccountTokenExpirationSeconds | int }}
          path: token
      {{- else }}
      - secret:
          name: {{ .oauth.existingSecret }}
          items:
            - {key: {{ .oauth.tokenKey | quote }}, path: token}
      {{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "hourglass.kafkaMounts" -}}
{{- if .Values.kafka.tls.existingSecret }}
- {name: kafka-tls, mountPath: /etc/hourglass/kafka-tls, readOnly: true}
{{- end }}
{{- if has (include "hourglass.saslKind" .) (list "password" "oauth") }}
- {name: kafka-sasl, mountPath: /etc/hourglass/kafka-sasl, readOnly: true}
{{- end }}
{{- end -}}

{{/*
hourglass.saslKind is what kafka.sasl.mechanism takes: "password" (PLAIN,
SCRAM), "oauth", "aws" or "" (no SASL).
*/}}
{{- define "hourglass.saslKind" -}}
{{- $m := lower .Values.kafka.sasl.mechanism -}}
{{- if has $m (list "plain" "scram-sha-256" "scram-sha-512") -}}password
{{- else if eq $m "oauthbearer" -}}oauth
{{- else if eq $m "aws_msk_iam" -}}aws
{{- end -}}
{{- end -}}

{{/*
The AWS credentials of AWS_MSK_IAM, from kafka.sasl.aws.existingSecret, as
env entries of every container that talks to Kafka: the AWS names, which
the credentials keep in every AWS tool.
*/}}
{{- define "hourglass.kafkaAWSEnv" -}}
{{- if eq (include "hourglass.saslKind" .) "aws" }}
{{- with .Values.kafka.sasl.aws }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef: {name: {{ .existingSecret }}, key: {{ .accessKeyIdKey | quote }}}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef: {name: {{ .existingSecret }}, key: {{ .secretAccessKeyKey | quote }}}
{{- if .sessionTokenKey }}
- name: AWS_SESSION_TOKEN
  valueFrom:
    secretKeyRef: {name: {{ .existingSecret }}, key: {{ .sessionTokenKey | quote }}}
{{- end }}
{{- if .region }}
- name: AWS_REGION
  value: {{ .region | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* ClickHouse password and TLS files, for the recorder and the migration Job. */}}
{{- define "hourglass.clickhouseVolumes" -}}
{{- with .Values.recorder.clickhouse }}
{{- if .existingSecret }}
- name: clickhouse-password
  secret:
    secretName: {{ .existingSecret }}
    defaultMode: 0440
    items:
      - {key: {{ .passwordKey | quote }}, path: password}
{{- end }}
{{- with .tls }}
{{- if .existingSecret }}
- name: clickhouse-tls
  secret:
    secretName: {{ .existingSecret }}
    defaultMode: 0440
    items:
      {{- if .caKey }}
      - {key: {{ .caKey | quote }}, path: ca.crt}
      {{- end }}
      {{- if .certKey }}
      - {key: {{ .certKey | quote }}, path: tls.crt}
      - {key: {{ .keyKey | quote }}, path: tls.key}
      {{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "hourglass.clickhouseMounts" -}}
{{- if .Values.recorder.clickhouse.existingSecret }}
- {name: clickhouse-password, mountPath: /etc/hourglass/clickhouse-password, readOnly: true}
{{- end }}
{{- if .Values.recorder.clickhouse.tls.existingSecret }}
- {name: clickhouse-tls, mountPath: /etc/hourglass/clickhouse-tls, readOnly: true}
{{- end }}
{{- end -}}

{{/* The closers file and the Secrets it reads, for the canceller and reconcile. */}}
{{- define "hourglass.closersVolumes" -}}
{{- if .Values.canceller.closers }}
- name: closers
  configMap:
    name: {{ include "hourglass.componentName" (dict "root" . "component" "closers") }}
{{- end }}
{{- range .Values.canceller.secretVolumes }}
- name: {{ .name }}
  secret:
    secretName: {{ .secretName }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{- define "hourglass.closersMounts" -}}
{{- if .Values.canceller.closers }}
- {name: closers, mountPath: /etc/hourglass/closers, readOnly: true}
{{- end }}
{{- range .Values.canceller.secretVolumes }}
- {name: {{ .name }}, mountPath: {{ .mountPath }}, readOnly: true}
{{- end }}
{{- end -}}

{{- define "hourglass.secretEnv" -}}
{{- range .Values.canceller.secretEnv }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .key }}
{{- end }}
{{- end -}}

{{/* The scratch directory every container gets, its root filesystem being read-only. */}}
{{- define "hourglass.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- end -}}

{{/*
The router's store of cancellations (HOURGLASS_CANCELLATIONS_DIR): the
mount of the volume "cancellations", an emptyDir or, with
router.cancellationsStore.persistence.enabled, a claim of the StatefulSet's
volumeClaimTemplates. It is never left to the service's default, a
temporary directory under /tmp, whose emptyDir is small.
*/}}
{{- define "hourglass.cancellationsDir" -}}
/var/lib/hourglass/cancellations
{{- end -}}

{{/* The router pod's volume of the store, unless it is a claim. */}}
{{- define "hourglass.cancellationsVolume" -}}
{{- $s := .Values.router.cancellationsStore -}}
{{- if not $s.persistence.enabled }}
- name: cancellations
  {{- if $s.sizeLimit }}
  emptyDir:
    sizeLimit: {{ $s.sizeLimit }}
  {{- else }}
  emptyDir: {}
  {{- end }}
{{- end }}
{{- end -}}

{{/*
The router StatefulSet's claim of the store, one per pod
(cancellations-<statefulset>-<ordinal>), with
router.cancellationsStore.persistence.enabled. Its labels are the selector
labels only: a StatefulSet's volumeClaimTemplates cannot change, and the
other labels change with every chart version.
*/}}
{{- define "hourglass.cancellationsClaims" -}}
{{- $p := .Values.router.cancellationsStore.persistence -}}
{{- if $p.enabled }}
{{- with $p.retentionPolicy }}
persistentVolumeClaimRetentionPolicy:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumeClaimTemplates:
  - metadata:
      name: cancellations
      labels:
        {{- include "hourglass.selectorLabels" (dict "root" . "component" "router") | nindent 8 }}
    spec:
      accessModes:
        {{- toYaml $p.accessModes | nindent 8 }}
      {{- if eq $p.storageClass "-" }}
      storageClassName: ""
      {{- else if $p.storageClass }}
      storageClassName: {{ $p.storageClass | quote }}
      {{- end }}
      resources:
        requests:
          storage: {{ $p.size }}
{{- end }}
{{- end -}}

{{/*
hourglass.validate fails the render on settings that cannot work together;
the schema checks each value on its own.
*/}}
{{- define "hourglass.validate" -}}
{{- $v := .Values -}}
{{- $parts := $v.topics.partitions | int -}}
{{- range $name := list "router" "canceller" -}}
{{- $c := index $v $name -}}
{{- if $c.autoscaling.enabled -}}
{{- if gt ($c.autoscaling.maxReplicas | int) $parts -}}
{{- fail (printf "%s.autoscaling.maxReplicas (%d) is above topics.partitions (%d): a consumer group gives each partition to one member, so pods beyond the partition count sit idle" $name ($c.autoscaling.maxReplicas | int) $parts) -}}
{{- end -}}
{{- if gt ($c.autoscaling.minReplicas | int) ($c.autoscaling.maxReplicas | int) -}}
{{- fail (printf "%s.autoscaling.minReplicas (%d) is above maxReplicas (%d)" $name ($c.autoscaling.minReplicas | int) ($c.autoscaling.maxReplicas | int)) -}}
{{- end -}}
{{- else if gt ($c.replicas | int) $parts -}}
{{- fail (printf "%s.replicas (%d) is above topics.partitions (%d): a consumer group gives each partition to one member, so pods beyond the partition count sit idle" $name ($c.replicas | int) $parts) -}}
{{- end -}}
{{- end -}}
{{- $saslKind := include "hourglass.saslKind" . -}}
{{- with $v.kafka.sasl -}}
{{- if and (eq $saslKind "password") (not .existingSecret) -}}
{{- fail (printf "kafka.sasl.mechanism is %s but kafka.sasl.existingSecret is empty: name the Secret holding the SASL password" .mechanism) -}}
{{- end -}}
{{- if and (eq $saslKind "password") (not .user) -}}
{{- fail (printf "kafka.sasl.mechanism is %s but kafka.sasl.user is empty" .mechanism) -}}
{{- end -}}
{{- if and (eq $saslKind "oauth") (eq (empty .oauth.serviceAccountTokenAudience) (empty .oauth.existingSecret)) -}}
{{- fail "kafka.sasl.mechanism is OAUTHBEARER: set one of kafka.sasl.oauth.serviceAccountTokenAudience (a projected service account token) and kafka.sasl.oauth.existingSecret (a Secret holding the token)" -}}
{{- end -}}
{{- if and (eq $saslKind "aws") (not .aws.existingSecret) -}}
{{- fail "kafka.sasl.mechanism is AWS_MSK_IAM but kafka.sasl.aws.existingSecret is empty: name the Secret holding the AWS credentials" -}}
{{- end -}}
{{- if and (eq $saslKind "aws") (not (or $v.kafka.tls.enabled $v.kafka.tls.existingSecret)) -}}
{{- fail "kafka.sasl.mechanism is AWS_MSK_IAM, which needs TLS: set kafka.tls.enabled" -}}
{{- end -}}
{{- end -}}
{{- range $where, $tls := dict "kafka.tls" $v.kafka.tls "recorder.clickhouse.tls" $v.recorder.clickhouse.tls -}}
{{- if ne (empty $tls.certKey) (empty $tls.keyKey) -}}
{{- fail (printf "%s: certKey and keyKey go together (a client certificate needs its key)" $where) -}}
{{- end -}}
{{- if and (not $tls.existingSecret) (or $tls.certKey $tls.keyKey) -}}
{{- fail (printf "%s: certKey and keyKey need existingSecret, the Secret holding them" $where) -}}
{{- end -}}
{{- end -}}
{{- $names := dict -}}
{{- range $v.canceller.secretVolumes -}}
{{- if hasKey $names .name -}}
{{- fail (printf "canceller.secretVolumes: name %q is used twice" .name) -}}
{{- end -}}
{{- if has .name (list "tmp" "closers" "kafka-tls" "kafka-sasl" "clickhouse-password" "clickhouse-tls") -}}
{{- fail (printf "canceller.secretVolumes: name %q is taken by the chart's own volumes" .name) -}}
{{- end -}}
{{- $_ := set $names .name true -}}
{{- end -}}
{{- range $v.router.extraVolumes -}}
{{- if has .name (list "tmp" "cancellations" "kafka-tls" "kafka-sasl" "outcomes-key") -}}
{{- fail (printf "router.extraVolumes: name %q is taken by the chart's own volumes" .name) -}}
{{- end -}}
{{- end -}}
{{- if $v.reconcile.enabled -}}
{{- $kind := $v.reconcile.kind -}}
{{- $entry := index $v.canceller.closers $kind -}}
{{- if not $entry -}}
{{- fail (printf "reconcile.kind %q is not a kind of canceller.closers: reconcile closes through that kind's sql closer" $kind) -}}
{{- end -}}
{{- if not $entry.sql -}}
{{- fail (printf "reconcile.kind %q: canceller.closers.%s has no sql closer; reconcile scans the order table of an sql closer" $kind $kind) -}}
{{- end -}}
{{- if not (dig "reconcile" "deadline" "" $entry.sql) -}}
{{- fail (printf "reconcile.kind %q: canceller.closers.%s.sql.reconcile.deadline is not set: how long after created_at an unpaid order is due" $kind $kind) -}}
{{- end -}}
{{- end -}}
{{- range $kind, $entry := $v.canceller.closers -}}
{{- range $type, $cfg := $entry -}}
{{- include "hourglass.refuseInlineSecrets" (dict "node" $cfg "path" (printf "canceller.closers.%s.%s" $kind $type) "type" $type "key" $type) -}}
{{- end -}}
{{- end -}}
{{- if and $v.outcomesKey.existingSecret (not $v.outcomesKey.key) -}}
{{- fail "outcomesKey.key is empty: name the key of outcomesKey.existingSecret that holds the signing key" -}}
{{- end -}}
{{- include "hourglass.routerMemory" . -}}
{{- end -}}

{{/*
hourglass.refuseInlineSecrets fails the render on a secret written into
canceller.closers as {value: ...}: the closers file is a ConfigMap, readable
by whoever reads the namespace's ConfigMaps and kept in the release's
history. Secrets of a closer (sql dsn, http bearer_token and
basic_auth.password, any later one) are maps of one of env, file and
value; every map under a closer with a "value" key is taken for one, except
the two that are not secrets: the kafka closer's own settings (value: event
or payload) and http headers (whose keys are header names). dict "node" the
value, "path" its key path, "type" the closer (sql, http, kafka), "key" its
own key.
*/}}
{{- define "hourglass.refuseInlineSecrets" -}}
{{- $node := .node -}}
{{- $path := .path -}}
{{- $type := .type -}}
{{- if kindIs "map" $node -}}
{{- if and (hasKey $node "value") (not (and (eq $type "kafka") (eq .key "kafka"))) (not (and (eq $type "http") (eq .key "headers"))) -}}
{{- fail (printf "%s: inline {value: ...} secrets are refused; use {env: ...} with canceller.secretEnv or {file: ...} with a mounted Secret (canceller.secretVolumes)" $path) -}}
{{- end -}}
{{- range $k, $child := $node -}}
{{- include "hourglass.refuseInlineSecrets" (dict "node" $child "path" (printf "%s.%s" $path $k) "type" $type "key" $k) -}}
{{- end -}}
{{- else if kindIs "slice" $node -}}
{{- range $i, $child := $node -}}
{{- include "hourglass.refuseInlineSecrets" (dict "node" $child "path" (printf "%s[%d]" $path $i) "type" $type "key" "") -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
hourglass.bytes is a memory quantity ("512Mi", "1G", "268435456") in
bytes; empty when it does not parse.
*/}}
{{- define "hourglass.bytes" -}}
{{- $q := toString . -}}
{{- if regexMatch "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$" $q -}}
{{- $n := regexFind "^[0-9]+(\\.[0-9]+)?" $q | float64 -}}
{{- $u := regexReplaceAll "^[0-9]+(\\.[0-9]+)?" $q "" -}}
{{- $mult := get (dict "" 1.0 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "k" 1000.0 "M" 1000000.0 "G" 1000000000.0 "T" 1000000000000.0) $u -}}
{{- mulf $n $mult | floor | int64 -}}
{{- end -}}
{{- end -}}

{{/*
hourglass.routerMemory fails the render when the router's memory limit
cannot hold what the router may hold by its limits (values.yaml,
router.resources): when it owns every partition of every tier, and a burst
fills them all at once,
  maxHeldBytes + maxHeld x 1.25 KiB: the records held, router-wide
  + 32 MiB: the client's decode budget, which bounds the compressed batches
    it decodes ahead of the polls
  + partitions x 24 x fetchPartitionBytes: a fetch per partition of records
    not compressed, the smallest 7 bytes on the wire and 167 decoded
  + timerBytes + 128 MiB (Go runtime, Kafka clients, metrics and the store
  of cancellations, up to 130 MB of RSS while it reads the whole topic)
must stay under GOMEMLIMIT, 90% of the limit. No limit, no check.
*/}}
{{- define "hourglass.routerMemory" -}}
{{- $r := .Values.router -}}
{{- $limit := dig "limits" "memory" "" $r.resources -}}
{{- $limitBytes := include "hourglass.bytes" $limit -}}
{{- if $limitBytes -}}
{{- $mi := 1048576.0 -}}
{{- $parts := mul (len .Values.topics.tiers) (.Values.topics.partitions | int64) -}}
{{- $held := addf ($r.maxHeldBytes | float64) (mulf ($r.maxHeld | float64) 1280.0) -}}
{{- $fetch := addf (mulf 32 $mi) (mulf $parts ($r.fetchPartitionBytes | float64) 24.0) -}}
{{- $need := addf $held $fetch ($r.timerBytes | float64) (mulf 128 $mi) -}}
{{- $soft := include "hourglass.gomemlimit" $limit | float64 -}}
{{- if gt $need $soft -}}
{{- fail (printf "router.resources.limits.memory %s (GOMEMLIMIT %.0fMiB) is below what a router may hold in a burst when it owns every partition: router.maxHeldBytes %.0fMiB + router.maxHeld %d x 1.25KiB + 32MiB of decode budget + %d partitions (%d tiers x %d) x 24 x router.fetchPartitionBytes %.3fMiB + router.timerBytes %.0fMiB + 128MiB for the Go runtime, the Kafka clients and the store of cancellations = %.0fMiB; raise the limit to at least %.0fMi, or lower router.fetchPartitionBytes, router.maxHeldBytes or router.maxHeld" (toString $limit) (divf $soft $mi) (divf ($r.maxHeldBytes | float64) $mi) ($r.maxHeld | int64) $parts (len .Values.topics.tiers) (.Values.topics.partitions | int64) (divf ($r.fetchPartitionBytes | float64) $mi) (divf ($r.timerBytes | float64) $mi) (divf $need $mi) (ceil (divf $need (mulf 0.9 $mi)))) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
hourglass.gomemlimit is 90% of a memory limit ("512Mi", "1G", "268435456")
in bytes, for GOMEMLIMIT: the Go runtime collects harder as the heap nears
it instead of being killed at the limit, and the other 10% is left to what
GOMEMLIMIT does not steer (goroutine stacks, memory not yet returned to
the OS). Empty when the limit does not parse.
*/}}
{{- define "hourglass.gomemlimit" -}}
{{- with include "hourglass.bytes" . -}}
{{- mulf (float64 .) 0.9 | floor | int64 -}}
{{- end -}}
{{- end -}}

{{/* The pod's scheduling settings: dict "root" $ "component" "router" "values" .Values.router. */}}
{{- define "hourglass.scheduling" -}}
{{- $c := .values -}}
{{- with $c.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $c.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $c.topologySpreadConstraints }}
{{- $selector := dict "matchLabels" (include "hourglass.selectorLabels" . | fromYaml) }}
topologySpreadConstraints:
{{- range $c.topologySpreadConstraints }}
{{- $tsc := deepCopy . }}
{{- if not (hasKey $tsc "labelSelector") }}{{ $_ := set $tsc "labelSelector" $selector }}{{ end }}
  - {{- toYaml $tsc | nindent 4 }}
{{- end }}
{{- end }}
{{- end -}}
