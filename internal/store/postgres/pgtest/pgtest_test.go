package pgtest

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// TestURL checks that each URL is a schema of its own, first on the search
// path, and that the server is the one the environment names, if any.
func TestURL(t *testing.T) {
	ctx := context.Background()
	a, b := URL(t), URL(t)
	if a == b {
		t.Fatalf("two calls gave the same URL %s", a)
	}
	for _, u := range []string{a, b} {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		var schema string
		if err := conn.QueryRow(ctx, "SELECT schemaname FROM pg_tables WHERE tablename = 't' AND schemaname = current_schema()").Scan(&schema); err != nil {
			t.Fatalf("%s: the table is not in the current schema: %v", u, err)
		}
		var version int
		if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil || version < 120000 {
			t.Errorf("server version %d (%v); want PostgreSQL 12 or later", version, err)
		}
	}
}

func TestWithSearchPath(t *testing.T) {
	cases := map[string]string{
		"postgres://u@h:5/db":                "postgres://u@h:5/db?search_path=s",
		"postgresql://u@/db?host=%2Ftmp&x=1": "postgresql://u@/db?host=%2Ftmp&search_path=s&x=1",
		"host=/tmp dbname=db":                "host=/tmp dbname=db search_path=s",
	}
	for in, want := range cases {
		if got := WithSearchPath(in, "s"); got != want {
			t.Errorf("WithSearchPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFindBinIn: PostgreSQL's programs are found through PATH (following a
// symbolic link to the real directory) or else in the versioned directories,
// the newest complete one first.
func TestFindBinIn(t *testing.T) {
	root := t.TempDir()
	mk := func(dir string, progs ...string) string {
		t.Helper()
		d := filepath.Join(root, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, p := range progs {
			if err := os.WriteFile(filepath.Join(d, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	all := []string{"initdb", "postgres", "pg_ctl"}
	mk("lib/postgresql/9.6/bin", all...)
	v15 := mk("lib/postgresql/15/bin", all...)
	mk("lib/postgresql/16/bin", "initdb", "postgres") // no pg_ctl: incomplete
	patterns := []string{filepath.Join(root, "lib/postgresql/*/bin")}

	t.Setenv("PATH", t.TempDir()) // no initdb on PATH
	got, err := findBinIn(patterns)
	if err != nil || got != v15 {
		t.Fatalf("findBinIn without PATH = %q, %v; want %q (15 is newer than 9.6; 16 lacks pg_ctl)", got, err, v15)
	}

	// initdb on PATH is a link into another installation: that one wins.
	other := mk("opt/pg/bin", all...)
	onPath := mk("bin")
	if err := os.Symlink(filepath.Join(other, "initdb"), filepath.Join(onPath, "initdb")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", onPath)
	if got, err := findBinIn(patterns); err != nil || got != other {
		t.Fatalf("findBinIn with initdb on PATH = %q, %v; want %q", got, err, other)
	}

	t.Setenv("PATH", t.TempDir())
	if _, err := findBinIn([]string{filepath.Join(root, "nowhere/*/bin")}); err == nil || !strings.Contains(err.Error(), "initdb") {
		t.Fatalf("findBinIn with nothing installed: %v", err)
	}
}

// TestClusterUser: the throwaway cluster runs as the postgres user when the
// tests run as root (initdb refuses root), else as the current user.
func TestClusterUser(t *testing.T) {
	ServerURL(t)
	shared.mu.Lock()
	c := shared.c
	shared.mu.Unlock()
	if os.Getenv(EnvURL) != "" {
		if c != nil {
			t.Fatalf("%s is set but a throwaway cluster was started", EnvURL)
		}
		return
	}
	if c == nil {
		t.Fatal("no throwaway cluster and no " + EnvURL)
	}
	want := os.Geteuid()
	if want == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		want, _ = strconv.Atoi(u.Uid)
		if c.cred == nil || int(c.cred.Uid) != want {
			t.Fatalf("running as root, the cluster's credential is %+v; want the postgres user (uid %d)", c.cred, want)
		}
	}
	fi, err := os.Stat(c.data())
	if err != nil {
		t.Fatal(err)
	}
	if owner := int(fi.Sys().(*syscall.Stat_t).Uid); owner != want {
		t.Errorf("the data directory belongs to uid %d, want %d", owner, want)
	}
	// The server process itself (its pid is the first line of postmaster.pid).
	pidFile, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _, _ := strings.Cut(string(pidFile), "\n")
	status, err := os.ReadFile("/proc/" + strings.TrimSpace(pid) + "/status")
	if err != nil {
		t.Fatalf("reading the postgres process status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "Uid:" {
			if uid, _ := strconv.Atoi(f[2]); uid != want { // effective uid
				t.Errorf("postgres runs as uid %d, want %d", uid, want)
			}
			return
		}
	}
	t.Error("no Uid line in the postgres process status")
}

// TestClusterStopStart: a test's own cluster refuses connections once
// stopped, and comes back with its data on the same URL once started.
func TestClusterStopStart(t *testing.T) {
	ctx := context.Background()
	cl := NewCluster(t)
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, cl.URL())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	cl.Stop(t)
	if err := exec("SELECT 1"); err == nil {
		t.Fatal("the stopped cluster took a connection")
	}
	cl.Start(t)
	if err := exec("DO $$ BEGIN IF (SELECT x FROM kept) <> 42 THEN RAISE 'lost'; END IF; END $$"); err != nil {
		t.Fatalf("after Start: %v", err)
	}
}
