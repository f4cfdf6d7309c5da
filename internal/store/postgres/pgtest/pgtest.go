// Package pgtest gives tests a PostgreSQL database: a fresh, empty schema per
// call of URL, on the server named by LOOKOUT_TEST_POSTGRES or else on a
// throwaway cluster that the package starts on first use (initdb + postgres
// on a free port, data and socket in a temporary directory; as the postgres
// user when the tests run as root) and stops with pg_ctl when the tests end.
//
// A package using it calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Tests never skip for want of PostgreSQL: when it cannot be started they
// fail and say why (under CI=true as anywhere else).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/internal/leaktest"
)

// EnvURL names the variable that points the tests at an existing server
// (a postgres:// URL or a key=value connection string); each test run gets
// schemas of its own there, dropped at the end of each test.
const EnvURL = "LOOKOUT_TEST_POSTGRES"

var shared struct {
	mu      sync.Mutex
	inMain  bool
	started bool
	base    string   // server URL (no schema)
	c       *cluster // nil when EnvURL is used
	err     error
}

// Main runs the package's tests and benchmarks, stops the throwaway cluster
// if one was started, checks that the tests left no goroutines running
// (leaktest), and exits.
func Main(m *testing.M) {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	leaks := leaktest.Start()
	code := m.Run()
	shared.mu.Lock()
	c := shared.c
	shared.c = nil
	shared.mu.Unlock()
	if c != nil {
		if err := c.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stopping the throwaway PostgreSQL cluster: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(leaktest.Check(code, leaks)) // after the cluster stops, with its goroutine
}

// ServerURL returns the URL of the server the tests use (starting the
// throwaway cluster if needed), without a schema of its own.
func ServerURL(tb testing.TB) string {
	tb.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		tb.Fatal("pgtest: call pgtest.Main(m) from the package's TestMain, so that the PostgreSQL cluster is stopped at the end")
	}
	if !shared.started {
		shared.started = true
		if u := os.Getenv(EnvURL); u != "" {
			shared.base = u
		} else {
			shared.c, shared.err = startCluster()
			if shared.err == nil {
				shared.base = shared.c.url
			}
		}
		if shared.err == nil {
			shared.err = sharedExtensions(shared.base)
		}
	}
	if shared.err != nil {
		tb.Fatalf("pgtest: PostgreSQL is needed and could not be started: %v\n"+
			"Install PostgreSQL (Debian/Ubuntu: apt-get install -y postgresql) so that initdb and postgres can be found, "+
			"or point %s at a server.", shared.err, EnvURL)
	}
	return shared.base
}

// URL returns a connection URL whose search_path is a new, empty schema on
// the test server, dropped when tb ends.
func URL(tb testing.TB) string {
	tb.Helper()
	base := ServerURL(tb)
	var b [6]byte
	rand.Read(b[:])
	schema := "lookout_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("pgtest: connecting to %s: %v", redact(base), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("pgtest: creating schema %s: %v", schema, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Errorf("pgtest: dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("pgtest: dropping schema %s: %v", schema, err)
		}
	})
	return WithSearchPath(base, schema)
}

// WithSearchPath adds a search_path to a connection URL or string.
func WithSearchPath(conn, schema string) string {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err == nil {
			q := u.Query()
			q.Set("search_path", schema)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return conn + " search_path=" + schema
}

func redact(conn string) string {
	if u, err := url.Parse(conn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return conn
}

// cluster is a throwaway PostgreSQL server.
type cluster struct {
	bin  string // directory of initdb, postgres and pg_ctl
	dir  string // temporary directory: data/, the socket, postgres.log
	port int
	url  string
	cred *syscall.Credential // the postgres user's, when running as root
	done chan error          // the server's exit
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }
func (c *cluster) log() string  { return filepath.Join(c.dir, "postgres.log") }

// command runs one of the PostgreSQL programs as the cluster's user.
func (c *cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "PGTZ=UTC")
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

// binDirs are where PostgreSQL's programs are looked for after PATH:
// Debian and Ubuntu's postgresql packages, the PGDG RPMs, source builds,
// Homebrew.
var binDirs = []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin", "/opt/homebrew/bin", "/usr/local/bin", "/usr/bin"}

// findBin finds the directory holding initdb, postgres and pg_ctl: that of
// the initdb on PATH (symbolic links followed), else the first of binDirs
// that has all three, the newest version first.
func findBin() (string, error) { return findBinIn(binDirs) }

func findBinIn(patterns []string) (string, error) {
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	for _, pat := range patterns {
		m, _ := filepath.Glob(pat)
		sort.SliceStable(m, func(i, j int) bool { return newerVersion(m[i], m[j]) })
		candidates = append(candidates, m...)
	}
	for _, dir := range candidates {
		ok := true
		for _, prog := range []string{"initdb", "postgres", "pg_ctl"} {
			if fi, err := os.Stat(filepath.Join(dir, prog)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				ok = false
				break
			}
		}
		if ok {
			return dir, nil
		}
	}
	return "", fmt.Errorf("initdb, postgres and pg_ctl were not found on PATH nor in %s", strings.Join(patterns, ", "))
}

// newerVersion orders directories such as /usr/lib/postgresql/16/bin before
// /usr/lib/postgresql/9.6/bin: by the numbers in them, not as strings.
func newerVersion(a, b string) bool {
	na, nb := versionNumbers(a), versionNumbers(b)
	for i := 0; i < len(na) && i < len(nb); i++ {
		if na[i] != nb[i] {
			return na[i] > nb[i]
		}
	}
	if len(na) != len(nb) {
		return len(na) > len(nb)
	}
	return a > b
}

func versionNumbers(s string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

// tempBase returns a directory for temporary directories that the postgres
// user can reach.
func tempBase(asOther bool) string {
	dir := os.TempDir()
	if !asOther {
		return dir
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startCluster() (*cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: bin}
	if os.Geteuid() == 0 {
		// initdb refuses to run as root: run the cluster as postgres.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root and there is no postgres user to run the cluster as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if c.dir, err = os.MkdirTemp(tempBase(c.cred != nil), "lookout-pgtest-"); err != nil {
		return nil, err
	}
	fail := func(err error) (*cluster, error) {
		os.RemoveAll(c.dir)
		return nil, err
	}
	if c.cred != nil {
		if err := filepath.WalkDir(c.dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Chown(p, int(c.cred.Uid), int(c.cred.Gid))
		}); err != nil {
			return fail(err)
		}
	}
	if out, err := c.command("initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb (%s): %v\n%s", bin, err, out))
	}
	for attempt := 0; ; attempt++ {
		if c.port, err = freePort(); err != nil {
			return fail(err)
		}
		err = c.startServer()
		if err == nil {
			break
		}
		if attempt == 2 {
			return fail(err)
		}
	}
	// Connections go through the Unix socket in the temporary directory; the
	// server listens on 127.0.0.1:port too.
	c.url = fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=%d&sslmode=disable", url.QueryEscape(c.dir), c.port)
	return c, nil
}

// startServer runs postgres in the foreground as a child of this process,
// and waits until it accepts connections. The child gets SIGQUIT should
// this process die without stopping it (the thread that starts it stays
// alive for as long as the server runs, as the parent-death signal asks).
func (c *cluster) startServer() error {
	logf, err := os.OpenFile(c.log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if c.cred != nil {
		os.Chown(c.log(), int(c.cred.Uid), int(c.cred.Gid))
	}
	cmd := c.command("postgres", "-D", c.data(), "-p", strconv.Itoa(c.port), "-k", c.dir, "-h", "127.0.0.1",
		"-c", "max_connections=300", "-c", "shared_buffers=256MB", "-c", "log_min_messages=warning", "-c", "timezone=UTC")
	cmd.Stdout, cmd.Stderr = logf, logf
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	started := make(chan error, 1)
	c.done = make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the server
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.done <- cmd.Wait()
		logf.Close()
	}()
	if err := <-started; err != nil {
		logf.Close()
		return fmt.Errorf("starting postgres: %v", err)
	}
	url := fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable connect_timeout=2", c.dir, c.port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-c.done:
			return fmt.Errorf("postgres exited (%v):\n%s", err, c.logTail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, url)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		if time.Now().After(deadline) {
			c.kill()
			return fmt.Errorf("postgres did not accept connections within a minute (%v):\n%s", err, c.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cluster) logTail() string {
	b, _ := os.ReadFile(c.log())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (c *cluster) kill() {
	c.command("pg_ctl", "stop", "-D", c.data(), "-m", "immediate", "-w").Run()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
	}
}

// stop shuts the cluster down with pg_ctl and removes its files.
func (c *cluster) stop() error {
	defer os.RemoveAll(c.dir)
	return c.shutdown()
}

// shutdown stops the server (fast: sessions are ended, as by a restart of
// the service) and waits for it to exit, keeping its files.
func (c *cluster) shutdown() error {
	out, err := c.command("pg_ctl", "stop", "-D", c.data(), "-m", "fast", "-w", "-t", "60").CombinedOutput()
	if err != nil {
		c.kill()
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("postgres did not exit after pg_ctl stop")
	}
}

// Cluster is a throwaway PostgreSQL server of one test's own, which the
// test may stop and start again (to see what a client does while the
// database is down). It is always started here, LOOKOUT_TEST_POSTGRES or
// not: a shared server cannot be stopped.
type Cluster struct {
	mu   sync.Mutex
	c    *cluster
	up   bool
	gone bool
}

// NewCluster starts a cluster for tb, stopped and removed when tb ends.
// It takes a few seconds (initdb); use URL for a schema of the shared
// server when the test does not stop the server.
func NewCluster(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := startCluster()
	if err == nil {
		if err = sharedExtensions(c.url); err != nil {
			c.stop()
		}
	}
	if err != nil {
		tb.Fatalf("pgtest: PostgreSQL is needed and could not be started: %v", err)
	}
	cl := &Cluster{c: c, up: true}
	tb.Cleanup(func() {
		cl.mu.Lock()
		defer cl.mu.Unlock()
		cl.gone = true
		if !cl.up {
			os.RemoveAll(c.dir)
			return
		}
		if err := c.stop(); err != nil {
			tb.Errorf("pgtest: stopping the test's PostgreSQL cluster: %v", err)
		}
	})
	return cl
}

// URL is the cluster's connection URL (its postgres database, schema
// public); it stays the same across Stop and Start.
func (cl *Cluster) URL() string { return cl.c.url }

// Stop stops the server (pg_ctl stop -m fast): connections are ended and
// new ones refused until Start.
func (cl *Cluster) Stop(tb testing.TB) {
	tb.Helper()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.gone || !cl.up {
		tb.Fatal("pgtest: Stop of a cluster that is not running")
	}
	cl.up = false
	if err := cl.c.shutdown(); err != nil {
		tb.Fatalf("pgtest: stopping the cluster: %v", err)
	}
}

// Start starts the stopped server again on the same port and data, and
// returns once it accepts connections.
func (cl *Cluster) Start(tb testing.TB) {
	tb.Helper()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.gone || cl.up {
		tb.Fatal("pgtest: Start of a cluster that is running")
	}
	if err := cl.c.startServer(); err != nil {
		tb.Fatalf("pgtest: starting the cluster again on port %d: %v", cl.c.port, err)
	}
	cl.up = true
}

// sharedExtensions installs the extensions the migrations use in schema
// public, once: a migration in a test's own schema would otherwise install
// them there, and dropping that schema would take them from every test.
func sharedExtensions(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
	return err
}
