package benchproc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU time of processes, from /proc/<pid>/stat: utime and stime (and
// cutime and cstime, the children waited for) in clock ticks, which are
// 1/100 s on Linux.
const clockTick = 10 * time.Millisecond

type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	s, err := parseStat(string(b))
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return s, nil
}

// parseStat reads the fields of a /proc/<pid>/stat line the benches use.
func parseStat(line string) (procStat, error) {
	// The command name, in parentheses, may hold spaces and parentheses:
	// fields count from after its last ")".
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("no command name")
	}
	f := strings.Fields(line[i+1:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("%d fields", len(f))
	}
	var s procStat
	var perr error
	num := func(i int) int64 {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil && perr == nil {
			perr = err
		}
		return v
	}
	// f[0] is field 3 (state): ppid is field 4, utime 14 ... cstime 17.
	s.ppid = int(num(1))
	s.utime, s.stime, s.cutime, s.cstime = num(11), num(12), num(13), num(14)
	return s, perr
}

// ParentPID is the parent process of pid: a PostgreSQL backend's is the
// postmaster.
func ParentPID(pid int) (int, error) {
	s, err := readStat(pid)
	return s.ppid, err
}

// ProcessCPU is the CPU time pid and its children waited for have used.
func ProcessCPU(pid int) (time.Duration, error) {
	s, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	return time.Duration(s.utime+s.stime+s.cutime+s.cstime) * clockTick, nil
}

// TreeCPU is ProcessCPU of pid plus the CPU time of its live children:
// a PostgreSQL postmaster and its backends (those that ended are in the
// postmaster's cutime and cstime).
func TreeCPU(pid int) (time.Duration, error) {
	total, err := ProcessCPU(pid)
	if err != nil {
		return 0, err
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		child, err := strconv.Atoi(filepath.Base(p))
		if err != nil || child == pid {
			continue
		}
		s, err := readStat(child)
		if err != nil || s.ppid != pid {
			continue // gone meanwhile, or not a child
		}
		total += time.Duration(s.utime+s.stime) * clockTick
	}
	return total, nil
}

// SelfCPU is the CPU time of this process: the load generator.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
