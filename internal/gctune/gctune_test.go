package gctune

import (
	"io/fs"
	"testing"
)

func TestAvailable(t *testing.T) {
	meminfo := "MemTotal:       24684084 kB\nMemFree:         1000 kB\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"machine only", map[string]string{"/proc/meminfo": meminfo}, 24684084 << 10},
		{"cgroup v2 limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "2147483648\n"}, 2 << 30},
		{"cgroup v2 without limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "max\n"}, 24684084 << 10},
		{"cgroup v1 limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824"}, 1 << 30},
		{"cgroup v1 'unlimited'", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712"}, 24684084 << 10},
		{"nothing readable", map[string]string{}, 0},
		{"meminfo without MemTotal", map[string]string{"/proc/meminfo": "MemFree: 3 kB\n"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Available(func(p string) ([]byte, error) {
				s, ok := tc.files[p]
				if !ok {
					return nil, fs.ErrNotExist
				}
				return []byte(s), nil
			})
			if got != tc.want {
				t.Errorf("Available = %d, want %d", got, tc.want)
			}
		})
	}
}
