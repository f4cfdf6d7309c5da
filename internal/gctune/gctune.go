// Package gctune sets the Go garbage collector for a long-running server:
// collections less often than Go's default while the heap is small, under
// a soft limit on the heap's size taken from the memory the machine (or
// its container) has.
//
// Why: a server of gateway calls and pushes allocates fast (a 500-event
// conversation's call reads and decodes about 300 KB) while what it keeps
// live is small, and Go's default (collect when the heap has doubled
// since the last collection, from 4 MiB) then collects dozens of times a
// second: in bench/gateway that was a fifth of the machine's CPU. With the
// heap allowed to grow to five times what is live (GOGC=400) the gateway
// proxies 25-30% more calls a second; the soft limit (half the memory
// available) makes the collector work harder again before the heap could
// crowd the machine. GOGC and GOMEMLIMIT in the environment are obeyed as
// Go obeys them: each replaces the choice here.
package gctune

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Percent is the GC percent set when GOGC is not.
const Percent = 400

// Settings are what Apply chose; zero where the environment decided.
type Settings struct {
	Percent int
	Limit   int64 // bytes
}

// Apply sets the collector unless the environment did, and says what it set.
func Apply() Settings {
	var s Settings
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(Percent)
		s.Percent = Percent
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok {
		if avail := Available(os.ReadFile); avail > 0 {
			s.Limit = avail / 2
			debug.SetMemoryLimit(s.Limit)
		}
	}
	return s
}

// Available is the memory the process may use: its cgroup's limit (v2 or
// v1) when one is set, else the machine's (MemTotal), else 0. read reads a
// file (os.ReadFile; tests give their own).
func Available(read func(string) ([]byte, error)) int64 {
	total := int64(0)
	if b, err := read("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				f := strings.Fields(rest)
				if len(f) == 2 && f[1] == "kB" {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						total = kb << 10
					}
				}
				break
			}
		}
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := read(p)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 { // "max": no limit
			continue
		}
		// cgroup v1 says "no limit" with a huge number.
		if total == 0 || n < total {
			return n
		}
	}
	return total
}
