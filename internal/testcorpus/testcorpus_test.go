package testcorpus

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindsSharedData(t *testing.T) {
	for _, p := range []string{
		filepath.Join(Dir(t), "MANIFEST.md"),
		File(t, "seeds/invariant-inbox.json"),
		filepath.Join(Conformance(t, "invariant"), "README.md"),
	} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
		if !filepath.IsAbs(p) || strings.Contains(p, "..") {
			t.Errorf("%s: want a clean absolute path", p)
		}
	}
}

// fatalRecorder records Fatal instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Fatal(args ...any) { r.msg = fmt.Sprint(args...) }

func TestAbsentDataFailsClearly(t *testing.T) {
	r := &fatalRecorder{TB: t}
	File(r, "no/such/file.json")
	if !strings.Contains(r.msg, "beside the repository") || !strings.Contains(r.msg, filepath.FromSlash("shared/corpus/no/such/file.json")) {
		t.Errorf("the failure %q does not say where the data should be", r.msg)
	}
}
