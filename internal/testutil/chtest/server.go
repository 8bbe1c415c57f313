package chtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
)

// Server is a private clickhouse-server: its own configuration and data in a
// temporary directory, listening on a free port of 127.0.0.1, run as a
// child process of the test. The shared server is not touched.
type Server struct {
	// Addr is the server's native address.
	Addr string

	t    testing.TB
	bin  string
	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// serverBinary finds clickhouse-server.
func serverBinary() (string, error) {
	if p, err := exec.LookPath("clickhouse-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/clickhouse-server"); err == nil {
		return "/usr/sbin/clickhouse-server", nil
	}
	return "", errors.New("clickhouse-server is not installed")
}

// StartServer starts a private server and waits until it answers; it is
// killed when t ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin, err := serverBinary()
	if err != nil {
		t.Fatalf("chtest: %v: run scripts/deps.sh", err)
	}
	port := freePort(t)
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), t: t, bin: bin, dir: t.TempDir()}
	for _, d := range []string{"data", "tmp", "user_files", "format_schemas", "log"} {
		if err := os.MkdirAll(filepath.Join(s.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := fmt.Sprintf(serverConfig, s.dir, s.dir, port, s.dir, s.dir, s.dir, s.dir, s.dir)
	if err := os.WriteFile(filepath.Join(s.dir, "config.xml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "users.xml"), []byte(usersConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	s.Start()
	return s
}

// Start starts the server (again, after Stop) on the same port and data,
// and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		s.t.Fatal("chtest: server already running")
	}
	cmd := exec.Command(s.bin, "--config-file="+filepath.Join(s.dir, "config.xml"))
	cmd.Dir = s.dir
	out, err := os.OpenFile(filepath.Join(s.dir, "log", "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.mu.Unlock()
		s.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		s.mu.Unlock()
		s.t.Fatalf("chtest: start %s: %v", s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); out.Close(); close(done) }() // it is killed; the status says no more
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := chstore.Open(ctx, s.config("default"))
		cancel()
		if err == nil {
			st.Close()
			return
		}
		select {
		case <-done:
			s.t.Fatalf("chtest: private clickhouse-server exited at start: %v\n%s", err, s.logs())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("chtest: private clickhouse-server on %s did not answer within 60s: %v\n%s", s.Addr, err, s.logs())
		}
		time.Sleep(100 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// Stop kills the server (SIGKILL, as a crash) and waits for it to exit. It
// does nothing when the server is not running.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill() // fails only when it has exited, which done says
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.t.Errorf("chtest: clickhouse-server pid %d did not exit within 30s of SIGKILL", cmd.Process.Pid)
	}
}

// Config returns a configuration of the server with database db.
func (s *Server) Config(db string) chstore.Config { return s.config(db) }

func (s *Server) config(db string) chstore.Config {
	return chstore.Config{Addr: s.Addr, Database: db, DialTimeout: 2 * time.Second}.WithDefaults()
}

// logs returns the tail of the server's logs, for failure messages.
func (s *Server) logs() string {
	var out []byte
	for _, f := range []string{"stdout.log", "server.err.log"} {
		b, _ := os.ReadFile(filepath.Join(s.dir, "log", f))
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		out = append(out, b...)
	}
	return string(out)
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// serverConfig is a minimal config.xml (the <yandex> root is read by old and
// current servers): loopback only, the native port only, everything in the
// test's directory. Arguments: dir (log), dir (errorlog), port, dir (path),
// dir (tmp), dir (user files), dir (format schemas), dir (users).
const serverConfig = `<?xml version="1.0"?>
<yandex>
    <logger>
        <level>warning</level>
        <log>%s/log/server.log</log>
        <errorlog>%s/log/server.err.log</errorlog>
        <size>10M</size>
        <count>1</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>%d</tcp_port>
    <max_connections>256</max_connections>
    <max_concurrent_queries>50</max_concurrent_queries>
    <mark_cache_size>268435456</mark_cache_size>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <path>%s/data/</path>
    <tmp_path>%s/tmp/</tmp_path>
    <user_files_path>%s/user_files/</user_files_path>
    <format_schema_path>%s/format_schemas/</format_schema_path>
    <users_config>%s/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <mlock_executable>false</mlock_executable>
</yandex>
`

// usersConfig has the user default, without a password, from loopback.
const usersConfig = `<?xml version="1.0"?>
<yandex>
    <profiles><default></default></profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas><default></default></quotas>
</yandex>
`
