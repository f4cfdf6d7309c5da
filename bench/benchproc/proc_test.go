package benchproc

import (
	"os"
	"testing"
	"time"
)

// A command name may hold spaces and parentheses; the fields after it are
// counted from its last ")".
func TestParseStat(t *testing.T) {
	line := "4242 (postgres: lookout (x) idle) S 17 4242 4242 0 -1 4194560 1302 0 0 0 250 31 7 3 20 0 1 0 9187 227328000 4562 18446744073709551615\n"
	s, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if s != (procStat{ppid: 17, utime: 250, stime: 31, cutime: 7, cstime: 3}) {
		t.Fatalf("parsed %+v", s)
	}
	if _, err := parseStat("4242 (short) S 1 2 3"); err == nil {
		t.Fatal("a short line parsed")
	}
}

// This process's stat names its parent, and the CPU time of a tree is at
// least its root's.
func TestSelf(t *testing.T) {
	for SelfCPU() < 30*time.Millisecond { // burn some CPU, so that /proc counts ticks
	}
	ppid, err := ParentPID(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if ppid != os.Getppid() {
		t.Fatalf("ParentPID = %d, os.Getppid = %d", ppid, os.Getppid())
	}
	own, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := TreeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if own <= 0 || tree < own {
		t.Fatalf("ProcessCPU %s, TreeCPU %s", own, tree)
	}
}
