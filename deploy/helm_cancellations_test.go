package deploy

// Tests of the router's store of cancellations: a volume of its own at a
// fixed path, named by HOURGLASS_CANCELLATIONS_DIR (the root filesystem is
// read-only, and the service's default, a temporary directory under /tmp,
// would fill the small /tmp emptyDir); an emptyDir by default, a claim per
// pod with persistence; and the router's other cancellation settings.

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const (
	// cancellationsVolume is the router's volume of the store, an emptyDir
	// or a volumeClaimTemplate.
	cancellationsVolume = "cancellations"
	// cancellationsDir is where the store is mounted.
	cancellationsDir = "/var/lib/hourglass/cancellations"
)

// claim is the part of a volumeClaimTemplate the tests read.
type claim struct {
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		AccessModes      []string `yaml:"accessModes"`
		StorageClassName *string  `yaml:"storageClassName"`
		Resources        struct {
			Requests map[string]string `yaml:"requests"`
		} `yaml:"resources"`
	} `yaml:"spec"`
}

// claimsOf returns the volumeClaimTemplates of a StatefulSet.
func claimsOf(t *testing.T, o object) []claim {
	t.Helper()
	var claims []claim
	if v := dig(o.raw, "spec", "volumeClaimTemplates"); v != nil {
		recode(t, v, &claims)
	}
	return claims
}

// claimTemplates returns the names of a workload's volumeClaimTemplates.
func claimTemplates(t *testing.T, o object) []string {
	t.Helper()
	var names []string
	for _, c := range claimsOf(t, o) {
		names = append(names, c.Metadata.Name)
	}
	return names
}

// routerOf returns the router StatefulSet of a render, its pod spec and the
// ConfigMaps.
func routerOf(t *testing.T, objs []object) (object, podSpec, map[string]object) {
	t.Helper()
	for _, o := range objs {
		if o.Kind == "StatefulSet" && component(o) == "router" {
			ps, _ := podSpecOf(t, o)
			return o, ps, configMapsOf(objs)
		}
	}
	t.Fatal("no router StatefulSet rendered")
	return object{}, podSpec{}, nil
}

// checkCancellationsStore checks that the router container's
// HOURGLASS_CANCELLATIONS_DIR is the writable mount of the cancellations
// volume, that the volume is an emptyDir or a claim (not both), and that
// the root filesystem stays read-only. It returns the emptyDir's size
// limit, or the claim.
func checkCancellationsStore(t *testing.T, o object, ps podSpec, configMaps map[string]object) (sizeLimit any, cl *claim) {
	t.Helper()
	c := ps.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: the router's root filesystem is not read-only", o)
	}
	env := containerEnv(t, o, c, configMaps)
	if got := env["HOURGLASS_CANCELLATIONS_DIR"]; got != cancellationsDir {
		t.Errorf("%s: HOURGLASS_CANCELLATIONS_DIR %q, want %s (left empty, the store is a temporary directory in the small /tmp emptyDir)", o, got, cancellationsDir)
	}
	if tmp, ok := env["TMPDIR"]; ok {
		t.Errorf("%s: TMPDIR is %q; the store does not use it, /tmp is the scratch emptyDir", o, tmp)
	}
	var mounts []string
	for _, m := range c.VolumeMounts {
		switch {
		case m.Name == cancellationsVolume:
			mounts = append(mounts, m.MountPath)
			if m.ReadOnly {
				t.Errorf("%s: the store of cancellations is mounted read-only", o)
			}
		case m.MountPath == cancellationsDir || strings.HasPrefix(cancellationsDir, m.MountPath+"/"):
			t.Errorf("%s: volume %s is mounted at %s, over the store", o, m.Name, m.MountPath)
		}
	}
	if !slices.Equal(mounts, []string{cancellationsDir}) {
		t.Errorf("%s: the volume %s is mounted at %v, want %s", o, cancellationsVolume, mounts, cancellationsDir)
	}

	var emptyDirs []podVol
	for _, v := range ps.Volumes {
		if v.Name == cancellationsVolume {
			emptyDirs = append(emptyDirs, v)
		}
	}
	var claims []claim
	for _, cl := range claimsOf(t, o) {
		if cl.Metadata.Name == cancellationsVolume {
			claims = append(claims, cl)
		}
	}
	switch {
	case len(emptyDirs)+len(claims) != 1:
		t.Errorf("%s: %d pod volumes and %d claims named %s, want one of them", o, len(emptyDirs), len(claims), cancellationsVolume)
	case len(claims) == 1:
		return nil, &claims[0]
	case emptyDirs[0].EmptyDir == nil:
		t.Errorf("%s: the volume %s is not an emptyDir: %+v", o, cancellationsVolume, emptyDirs[0])
	default:
		return emptyDirs[0].EmptyDir.SizeLimit, nil
	}
	return nil, nil
}

// TestChartCancellationsStore checks the store's volume in every scenario,
// and for each setting of router.cancellationsStore: an emptyDir with its
// size limit by default, a claim per pod with persistence (size, access
// modes, storage class, retention policy), never both, never in the
// canceller.
func TestChartCancellationsStore(t *testing.T) {
	t.Parallel()
	for _, values := range chartScenarios {
		t.Run(scenarioName(values), func(t *testing.T) {
			t.Parallel()
			objs := parseManifests(t, scenarioRender(t, values))
			o, ps, configMaps := routerOf(t, objs)
			checkCancellationsStore(t, o, ps, configMaps)
			for _, w := range objs {
				ps, ok := podSpecOf(t, w)
				if !ok || component(w) == "router" {
					continue
				}
				for _, c := range ps.Containers {
					for _, m := range c.VolumeMounts {
						if m.Name == cancellationsVolume {
							t.Errorf("%s container %s mounts the router's store of cancellations", w, c.Name)
						}
					}
				}
			}
		})
	}

	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name      string
		values    string
		sizeLimit any    // of the emptyDir; nil: none
		claim     *claim // the claim; nil: an emptyDir
		retention map[string]string
	}{
		{name: "default size limit", sizeLimit: "1Gi"},
		{name: "size limit", values: `router: {cancellationsStore: {sizeLimit: 10Gi}}`, sizeLimit: "10Gi"},
		{name: "no size limit", values: `router: {cancellationsStore: {sizeLimit: ""}}`},
		{
			name: "persistence",
			values: `
router:
  cancellationsStore:
    persistence:
      enabled: true
      size: 5Gi
      storageClass: fast-ssd
      accessModes: [ReadWriteOncePod]
      retentionPolicy: {whenDeleted: Delete, whenScaled: Delete}
`,
			claim:     claimOf(t, "5Gi", str("fast-ssd"), "ReadWriteOncePod"),
			retention: map[string]string{"whenDeleted": "Delete", "whenScaled": "Delete"},
		},
		{
			name:   "persistence with the default storage class",
			values: `router: {cancellationsStore: {persistence: {enabled: true}}}`,
			claim:  claimOf(t, "2Gi", nil, "ReadWriteOnce"),
		},
		{
			name:   "persistence without a storage class",
			values: `router: {cancellationsStore: {persistence: {enabled: true, storageClass: "-"}}}`,
			claim:  claimOf(t, "2Gi", str(""), "ReadWriteOnce"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, ps, configMaps := routerOf(t, mustRender(t, tc.values))
			sizeLimit, cl := checkCancellationsStore(t, o, ps, configMaps)
			if tc.claim == nil {
				if cl != nil || fmt.Sprint(sizeLimit) != fmt.Sprint(tc.sizeLimit) {
					t.Errorf("%s: emptyDir sizeLimit %v, claim %+v; want an emptyDir of sizeLimit %v", o, sizeLimit, cl, tc.sizeLimit)
				}
				return
			}
			if cl == nil {
				t.Fatalf("%s: the store is an emptyDir, want a claim", o)
			}
			if !reflect.DeepEqual(cl.Spec, tc.claim.Spec) {
				t.Errorf("%s: claim %+v, want %+v", o, cl.Spec, tc.claim.Spec)
			}
			// Only the selector labels: the others change with the chart's
			// version, and volumeClaimTemplates cannot change.
			if want := map[string]string{
				"app.kubernetes.io/name": "hourglass", "app.kubernetes.io/instance": chartRelease, "app.kubernetes.io/component": "router",
			}; !reflect.DeepEqual(cl.Metadata.Labels, want) {
				t.Errorf("%s: claim labels %v, want %v", o, cl.Metadata.Labels, want)
			}
			var retention map[string]string
			if v := dig(o.raw, "spec", "persistentVolumeClaimRetentionPolicy"); v != nil {
				recode(t, v, &retention)
			}
			if !reflect.DeepEqual(retention, tc.retention) {
				t.Errorf("%s: persistentVolumeClaimRetentionPolicy %v, want %v", o, retention, tc.retention)
			}
		})
	}
}

// claimOf is a claim spec the chart renders.
func claimOf(t *testing.T, size string, class *string, modes ...string) *claim {
	t.Helper()
	var c claim
	c.Spec.AccessModes = modes
	c.Spec.StorageClassName = class
	c.Spec.Resources.Requests = map[string]string{"storage": size}
	return &c
}

// TestChartCancellationsConfig checks the router's cancellation settings:
// the service's defaults (the topic derived from the prefix, a grace of
// 1h) unless set, the values when set, and the outcome key the router
// signs the events of cancelled deadlines with.
func TestChartCancellationsConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		values string
		want   map[string]string // "": must not be set
	}{
		{
			name: "defaults",
			want: map[string]string{"HOURGLASS_CANCELLATIONS_TOPIC": "", "HOURGLASS_CANCELLATION_GRACE": "1h", "HOURGLASS_OUTCOMES_KEY_FILE": ""},
		},
		{
			name: "set",
			values: `
router: {cancellationsTopic: orders.cancellations, cancellationGrace: 90m}
outcomesKey: {existingSecret: hmac}
`,
			want: map[string]string{
				"HOURGLASS_CANCELLATIONS_TOPIC": "orders.cancellations", "HOURGLASS_CANCELLATION_GRACE": "90m",
				"HOURGLASS_OUTCOMES_KEY_FILE": "/etc/hourglass/outcomes-key/key",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, ps, configMaps := routerOf(t, mustRender(t, tc.values))
			env := containerEnv(t, o, ps.Containers[0], configMaps)
			for k, want := range tc.want {
				if got, ok := env[k]; got != want || ok != (want != "") {
					t.Errorf("%s: %s=%q (set: %v), want %q", o, k, got, ok, want)
				}
			}
		})
	}
}
