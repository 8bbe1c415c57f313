package dbtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Bounds of a private server's start and stop.
const (
	pgStartTimeout = 30 * time.Second
	pgStopTimeout  = 30 * time.Second
)

// Postgres is a private Postgres server started by StartPostgres.
type Postgres struct {
	// DSN reaches the server as the superuser postgres, database postgres,
	// over 127.0.0.1 without TLS (sslmode=disable).
	DSN string
	// CAFile, with WithTLS, is the PEM certificate of the CA that signed the
	// server's certificate (for 127.0.0.1 and localhost).
	CAFile string

	bin     string // directory of initdb, pg_ctl
	dir     string // holds data/, the socket and the log
	asRoot  bool   // run the server's tools as user postgres
	running bool
}

// Option configures StartPostgres.
type Option func(*pgOptions)

type pgOptions struct{ tls bool }

// WithTLS makes the server accept TLS with a certificate for 127.0.0.1 and
// localhost, signed by a CA made for it (Postgres.CAFile).
func WithTLS() Option { return func(o *pgOptions) { o.tls = true } }

// StartPostgres starts a private Postgres server for a test that needs the
// database to really go away and come back: initdb and pg_ctl from
// /usr/lib/postgresql/*/bin (the newest), run as user postgres through
// runuser when the test runs as root, data, socket and log in a temporary
// directory, listening only on 127.0.0.1 at a free port, fsync off. A
// committed transaction survives Stop (synchronous_commit stays on: the
// operating system keeps what fsync would have forced). The server is
// stopped and its directory removed in t.Cleanup.
func StartPostgres(t testing.TB, opts ...Option) *Postgres {
	t.Helper()
	var o pgOptions
	for _, opt := range opts {
		opt(&o)
	}
	p := &Postgres{bin: pgBin(t), asRoot: os.Geteuid() == 0}
	uid, gid := p.makeDir(t)
	data := filepath.Join(p.dir, "data")
	if out, err := p.run(filepath.Join(p.bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		t.Fatalf("dbtest: initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	p.configure(t, data, port, o.tls, uid, gid)
	p.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	p.Start(t)
	return p
}

// makeDir creates p.dir, which t.Cleanup removes after stopping the
// server. When the test runs as root, the directory goes to the user
// postgres, whose uid and gid it returns; otherwise -1, -1.
func (p *Postgres) makeDir(t testing.TB) (uid, gid int) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hourglass-pg-")
	if err != nil {
		t.Fatalf("dbtest: postgres dir: %v", err)
	}
	p.dir = dir
	t.Cleanup(func() {
		if p.running {
			_, _ = p.pgCtl("stop", "-m", "immediate", "-w", "-t", seconds(pgStopTimeout))
		}
		_ = os.RemoveAll(dir)
	})
	uid, gid = -1, -1
	if p.asRoot {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("dbtest: the test runs as root and Postgres refuses to: it needs the user postgres (%v); run scripts/deps.sh", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatalf("dbtest: chown %s to postgres: %v", dir, err)
		}
	}
	return uid, gid
}

// configure appends the server's settings to postgresql.conf in data:
// 127.0.0.1:port only, the socket in p.dir, fsync off, small. With tls it
// writes fresh certificates (owned by uid and gid when not -1; the CA in
// p.CAFile) and turns ssl on.
func (p *Postgres) configure(t testing.TB, data string, port int, tls bool, uid, gid int) {
	t.Helper()
	dir := p.dir
	settings := fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
fsync = off
full_page_writes = off
max_connections = 50
shared_buffers = 16MB
`, port, dir)
	if tls {
		cert, key := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
		p.CAFile = filepath.Join(dir, "ca.pem")
		if err := writeCerts(p.CAFile, cert, key, uid, gid); err != nil {
			t.Fatalf("dbtest: TLS certificates: %v", err)
		}
		settings += fmt.Sprintf("ssl = on\nssl_cert_file = '%s'\nssl_key_file = '%s'\n", cert, key)
	}
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("dbtest: postgresql.conf: %v", err)
	}
	_, err = f.WriteString(settings)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("dbtest: postgresql.conf: %v", err)
	}
}

// Stop stops the server at once (pg_ctl stop -m immediate): connections
// break and new ones are refused.
func (p *Postgres) Stop(t testing.TB) {
	t.Helper()
	if out, err := p.pgCtl("stop", "-m", "immediate", "-w", "-t", seconds(pgStopTimeout)); err != nil {
		t.Fatalf("dbtest: pg_ctl stop: %v\n%s", err, out)
	}
	p.running = false
}

// Start starts the server (again) and waits, at most 30s, until it accepts
// connections.
func (p *Postgres) Start(t testing.TB) {
	t.Helper()
	out, err := p.pgCtl("start", "-w", "-t", seconds(pgStartTimeout), "-l", filepath.Join(p.dir, "log"))
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "log"))
		t.Fatalf("dbtest: pg_ctl start: %v\n%s\nserver log:\n%s", err, out, log)
	}
	p.running = true

	cfg, err := pgx.ParseConfig(p.DSN)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	deadline := time.Now().Add(pgStartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dbtest: postgres at %s does not accept connections after %s: %v", p.DSN, pgStartTimeout, err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a bounded wait
	}
}

func (p *Postgres) pgCtl(args ...string) ([]byte, error) {
	return p.run(filepath.Join(p.bin, "pg_ctl"), append([]string{"-D", filepath.Join(p.dir, "data")}, args...)...)
}

// run runs a Postgres tool, as user postgres when the test runs as root.
func (p *Postgres) run(name string, args ...string) ([]byte, error) {
	if p.asRoot {
		args = append([]string{"-u", "postgres", "--", name}, args...)
		name = "runuser"
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = p.dir
	return cmd.CombinedOutput()
}

// pgBin returns the newest /usr/lib/postgresql/<version>/bin holding initdb.
func pgBin(t testing.TB) string {
	t.Helper()
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		t.Fatal("dbtest: initdb not found in /usr/lib/postgresql/*/bin: the Postgres server package is needed; run scripts/deps.sh")
	}
	version := func(path string) int {
		v, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(path, "/usr/lib/postgresql/"), "/")[0])
		return v
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	return filepath.Dir(found[0])
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dbtest: free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }
