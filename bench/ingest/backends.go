package main

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/postgres"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// openBackend opens a fresh store of the named backend; the function it
// returns closes it and removes what was made for it.
func openBackend(ctx context.Context, name, pgURL string) (store.Store, func(), error) {
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
			if pgURL, stop, err = startCluster(); err != nil {
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

// startCluster starts a throwaway PostgreSQL cluster (initdb + pg_ctl, as
// the postgres user when run as root) with default settings in a temporary
// directory, and returns its URL and a function that stops and removes it.
func startCluster() (string, func(), error) {
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", nil, fmt.Errorf("running as root with no postgres user to run the cluster as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "lookout-bench-pg-")
	if err != nil {
		return "", nil, err
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
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	opts := fmt.Sprintf("-p %d -k %s -h 127.0.0.1 -c max_connections=200 -c shared_buffers=256MB", port, dir)
	if err := run("pg_ctl", "start", "-D", data, "-w", "-t", "60", "-l", filepath.Join(dir, "log"), "-o", opts); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	stop := func() {
		run("pg_ctl", "stop", "-D", data, "-m", "fast", "-w", "-t", "60")
		os.RemoveAll(dir)
	}
	time.Sleep(100 * time.Millisecond)
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), stop, nil
}
