// Package benchstore opens the stores and servers the bench commands
// measure: a fresh SQLite file, or PostgreSQL at a URL or in a throwaway
// cluster.
package benchstore

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/lookout-dev/lookout/internal/server"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/postgres"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// Open opens a fresh store of the named backend; the function it
// returns closes it and removes what was made for it.
func Open(ctx context.Context, name, pgURL string) (store.Store, func(), error) {
	switch name {
	case "sqlite":
		dir, err := os.MkdirTemp("", "lookout-bench-")
		if err != nil {
			return nil, nil, err
		}
		st, err := sqlite.Open(ctx, filepath.Join(dir, "lookout.db"))
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		return st, func() { st.Close(); os.RemoveAll(dir) }, nil
	case "postgres":
		stop := func() {}
		if pgURL == "" {
			var err error
			if pgURL, _, stop, err = StartCluster(); err != nil {
				return nil, nil, err
			}
		}
		st, err := postgres.Open(ctx, pgURL)
		if err != nil {
			stop()
			return nil, nil, err
		}
		return st, func() { st.Close(); stop() }, nil
	}
	return nil, nil, fmt.Errorf("unknown backend %q", name)
}

// StartCluster starts a throwaway PostgreSQL cluster (initdb + pg_ctl, as
// the postgres user when run as root) with default settings in a temporary
// directory, and returns its URL, its data directory and a function that
// stops and removes it.
func StartCluster() (string, string, func(), error) {
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", "", nil, fmt.Errorf("running as root with no postgres user to run the cluster as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "lookout-bench-pg-")
	if err != nil {
		return "", "", nil, err
	}
	if cred != nil {
		filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err == nil {
				err = os.Chown(p, int(cred.Uid), int(cred.Gid))
			}
			return err
		})
	}
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", name, err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"); err != nil {
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	opts := fmt.Sprintf("-p %d -k %s -h 127.0.0.1 -c max_connections=200 -c shared_buffers=256MB", port, dir)
	if err := run("pg_ctl", "start", "-D", data, "-w", "-t", "60", "-l", filepath.Join(dir, "log"), "-o", opts); err != nil {
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	stop := func() {
		run("pg_ctl", "stop", "-D", data, "-m", "fast", "-w", "-t", "60")
		os.RemoveAll(dir)
	}
	time.Sleep(100 * time.Millisecond)
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), data, stop, nil
}

// Serve runs the API over st on a loopback port and returns its base URL
// and a function that stops it.
func Serve(st store.Store) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := server.New(server.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return "http://" + ln.Addr().String(), func() { hs.Close(); srv.Close() }, nil
}

// Backends names the backends a -backend flag value selects: "sqlite",
// "postgres", or "both".
func Backends(flag string) ([]string, error) {
	switch flag {
	case "both":
		return []string{"sqlite", "postgres"}, nil
	case "sqlite", "postgres":
		return []string{flag}, nil
	}
	return nil, fmt.Errorf("-backend must be sqlite, postgres or both, not %q", flag)
}

// StartCPUProfile writes a CPU profile to path until the returned function
// is called; with path "" it does nothing.
func StartCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
