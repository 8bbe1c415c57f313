package deploy

// Tests that the image's own binary accepts the configuration the chart
// renders: flags, HOURGLASS_* variables and mounted files.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// commandHelp is what `hourglass <command> --help` lists.
type commandHelp struct {
	flags     map[string]bool   // flag names without --
	envToFlag map[string]string // HOURGLASS_* -> flag name
}

var flagLine = regexp.MustCompile(`^\s+--([a-z0-9-]+)`)

var envNote = regexp.MustCompile(`\(env (HOURGLASS_[A-Z0-9_]+)`)

func readHelp(t *testing.T, bin, command string) commandHelp {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, command, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("hourglass %s --help: %v\n%s", command, err, out)
	}
	h := commandHelp{flags: map[string]bool{}, envToFlag: map[string]string{}}
	for line := range strings.SplitSeq(string(out), "\n") {
		m := flagLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		h.flags[m[1]] = true
		if e := envNote.FindStringSubmatch(line); e != nil {
			h.envToFlag[e[1]] = m[1]
		}
	}
	if len(h.flags) < 3 {
		t.Fatalf("hourglass %s --help: found only %d flags in\n%s", command, len(h.flags), out)
	}
	return h
}

// serviceCommands are the commands that take --check-config.
var serviceCommands = []string{"router", "canceller", "recorder"}

// TestChartConfigAccepted runs the image's own binary on the configuration
// each scenario renders: every HOURGLASS_* variable and every flag a pod
// sets must be one the command has, and each service must accept its
// configuration with --check-config, taking every variable from the
// environment. Mounted Secrets and ConfigMaps are laid out under a
// temporary root with test certificates and passwords, and the paths in the
// configuration point there.
func TestChartConfigAccepted(t *testing.T) {
	t.Parallel()
	_, outDir := imageBinaries(t)
	bin := filepath.Join(outDir, "hourglass")
	certPEM, keyPEM := testCertificate(t)
	helps := map[string]commandHelp{}

	for _, values := range chartScenarios {
		t.Run(scenarioName(values), func(t *testing.T) {
			objs := parseManifests(t, scenarioRender(t, values))
			configMaps := configMapsOf(objs)
			checked := 0
			for _, o := range objs {
				ps, ok := podSpecOf(t, o)
				if !ok {
					continue
				}
				for _, c := range ps.Containers {
					if c.Image != ps.Containers[0].Image {
						continue // a sidecar of another image (<component>.sidecars)
					}
					if len(c.Args) == 0 {
						t.Errorf("%s container %s: no args; the image's entrypoint needs a command", o, c.Name)
						continue
					}
					command := c.Args[0]
					h, ok := helps[command]
					if !ok {
						h = readHelp(t, bin, command)
						helps[command] = h
					}
					where := fmt.Sprintf("%s container %s (hourglass %s)", o, c.Name, command)
					checkCommandLine(t, where, command, h, c.Args[1:], containerEnv(t, o, c, configMaps))
					if slices.Contains(serviceCommands, command) && len(c.Args) == 1 {
						checkConfig(t, where, bin, command, h, o, ps, c, configMaps, certPEM, keyPEM)
						checked++
					}
				}
			}
			if checked < 2 {
				t.Errorf("checked only %d service configurations", checked)
			}
		})
	}
}

// checkCommandLine checks that every flag in args and every HOURGLASS_*
// variable in env is one that hourglass <command> has.
func checkCommandLine(t *testing.T, where, command string, h commandHelp, args []string, env map[string]string) {
	t.Helper()
	for _, a := range args {
		name, isFlag := strings.CutPrefix(a, "--")
		name, _, _ = strings.Cut(name, "=")
		if !isFlag || h.flags[name] {
			continue
		}
		t.Errorf("%s: --%s is not a flag of hourglass %s", where, name, command)
	}
	for k := range env {
		if strings.HasPrefix(k, "HOURGLASS_") && h.envToFlag[k] == "" {
			t.Errorf("%s: %s is no flag's variable", where, k)
		}
	}
}

// checkConfig runs `hourglass <command> --check-config` with a container's
// environment and mounts, and checks that it is valid and that every
// variable set took effect.
func checkConfig(t *testing.T, where, bin, command string, h commandHelp, o object, ps podSpec, c ctr, configMaps map[string]object, certPEM, keyPEM []byte) {
	t.Helper()
	r := newConfigRoot(t, c, certPEM, keyPEM)
	env := containerEnv(t, o, c, configMaps)
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			env[e.Name] = "postgres://hourglass:test@127.0.0.1:5432/test"
		}
	}
	var pathRefs []string // every mounted path the configuration names
	for k, v := range env {
		env[k] = r.remap(v)
		pathRefs = append(pathRefs, v)
	}
	pathRefs = append(pathRefs, r.writeVolumes(t, where, o, c, ps, configMaps)...)
	r.writeNamedFiles(t, pathRefs)
	runCheckConfig(t, where, bin, command, h, r.dir, env)
}

// configRoot is a temporary directory that stands for / to a container:
// its mounts are laid out under it, and the paths of its configuration
// are remapped into it.
type configRoot struct {
	dir             string
	mounts          []string // the container's mount paths, longest first
	remap           func(string) string
	certPEM, keyPEM []byte
}

func newConfigRoot(t *testing.T, c ctr, certPEM, keyPEM []byte) configRoot {
	t.Helper()
	r := configRoot{dir: t.TempDir(), certPEM: certPEM, keyPEM: keyPEM}
	for _, m := range c.VolumeMounts {
		r.mounts = append(r.mounts, m.MountPath)
	}
	// One pass, longest mount first, so that a path already moved under
	// root (itself under /tmp) is not moved again by the /tmp mount.
	slices.SortFunc(r.mounts, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, m := range r.mounts {
		pairs = append(pairs, m+"/", filepath.Join(r.dir, m)+"/")
	}
	under := strings.NewReplacer(pairs...)
	// A value that is a mount path itself (a directory such as
	// HOURGLASS_CANCELLATIONS_DIR) moves too.
	r.remap = func(v string) string {
		if slices.Contains(r.mounts, v) {
			return filepath.Join(r.dir, v)
		}
		return under.Replace(v)
	}
	return r
}

// fake returns test content for a mounted secret file, by its name.
func (r configRoot) fake(path string) []byte {
	switch {
	case strings.HasSuffix(path, ".key"):
		return r.keyPEM
	case strings.HasSuffix(path, ".crt"), strings.HasSuffix(path, ".pem"):
		return r.certPEM
	case filepath.Base(path) == "dsn":
		return []byte("postgres://hourglass:test@127.0.0.1:5432/test\n")
	}
	// Long enough for every secret, the outcome signing key (16 bytes
	// at least) too.
	return []byte("test-secret-0123456789abcdef\n")
}

// writeVolumes lays out a container's mounted ConfigMaps, with the paths
// in them remapped, and the items of its mounted Secrets; the workload's
// claims (volumeClaimTemplates) are empty directories. It returns the
// ConfigMaps' contents, which may name mounted files.
func (r configRoot) writeVolumes(t *testing.T, where string, o object, c ctr, ps podSpec, configMaps map[string]object) []string {
	t.Helper()
	var pathRefs []string
	for _, m := range c.VolumeMounts {
		dir := filepath.Join(r.dir, m.MountPath)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(ps.Volumes, func(v podVol) bool { return v.Name == m.Name })
		if i < 0 {
			if !slices.Contains(claimTemplates(t, o), m.Name) {
				t.Fatalf("%s: volume %s is mounted but not defined", where, m.Name)
			}
			continue
		}
		v := ps.Volumes[i]
		switch {
		case v.ConfigMap != nil:
			cm, ok := configMaps[v.ConfigMap.Name]
			if !ok {
				t.Fatalf("%s: ConfigMap %s is mounted but not rendered", where, v.ConfigMap.Name)
			}
			for name, data := range cm.Data {
				pathRefs = append(pathRefs, data)
				writeFile(t, filepath.Join(dir, name), []byte(r.remap(data)))
			}
		case v.Secret != nil:
			for _, it := range v.Secret.Items {
				writeFile(t, filepath.Join(dir, it.Path), r.fake(it.Path))
			}
		}
	}
	return pathRefs
}

// writeNamedFiles writes the files of Secrets mounted whole: those under a
// mount that pathRefs name and that are not there yet.
func (r configRoot) writeNamedFiles(t *testing.T, pathRefs []string) {
	t.Helper()
	for _, m := range r.mounts {
		for _, ref := range pathRefs {
			for _, p := range regexp.MustCompile(regexp.QuoteMeta(m)+`/[A-Za-z0-9._/-]+`).FindAllString(ref, -1) {
				if _, err := os.Stat(filepath.Join(r.dir, p)); errors.Is(err, os.ErrNotExist) {
					writeFile(t, filepath.Join(r.dir, p), r.fake(p))
				}
			}
		}
	}
}

// runCheckConfig runs `hourglass <command> --check-config` with only env
// (and HOME and TMPDIR in root), and checks that it accepts the
// configuration and that every variable of a flag set that flag.
func runCheckConfig(t *testing.T, where, bin, command string, h commandHelp, root string, env map[string]string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, command, "--check-config")
	cmd.Env = []string{"HOME=" + root, "TMPDIR=" + root}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s: --check-config: %v\n%s", where, err, out)
		return
	}
	sources := map[string]string{}
	for line := range strings.SplitSeq(string(out), "\n") {
		if i := strings.LastIndex(line, " ("); strings.HasPrefix(line, "--") && i > 0 && strings.HasSuffix(line, ")") {
			name, _, _ := strings.Cut(line[2:], "=")
			sources[name] = line[i+2 : len(line)-1]
		}
	}
	for k, v := range env {
		if flag := h.envToFlag[k]; flag != "" && v != "" && sources[flag] != "env" {
			t.Errorf("%s: %s=%q did not set --%s (source %q)", where, k, v, flag, sources[flag])
		}
	}
}

// writeFile writes a file, making its directory.
func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// testCertificate returns a self-signed certificate and its key, PEM.
func testCertificate(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hourglass test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}
