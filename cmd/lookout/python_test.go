package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/testcorpus"
)

// debianPython is Debian's python3 (the one the Python client's tests are
// for), else the first python3 on PATH; "" when there is none.
func debianPython() string {
	if p := os.Getenv("LOOKOUT_TEST_PYTHON"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	p, _ := exec.LookPath("python3")
	return p
}

// needPython skips without python3, except under CI, where .ci/run installs it.
func needPython(t *testing.T) string {
	t.Helper()
	py := debianPython()
	if py == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is missing: .ci/run installs it (apt-get install python3 python3-venv)")
		}
		t.Skip("python3 is missing")
	}
	return py
}

// TestPythonClient runs the Python client's unittest suite (python/tests)
// against a real lookout serve in local mode, on a new SQLite database.
func TestPythonClient(t *testing.T) {
	py := needPython(t)
	srv := startChild(t, filepath.Join(t.TempDir(), "py.db"))
	corpusAbs, err := filepath.Abs(testcorpus.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", "tests")
	cmd.Dir = "../../python"
	cmd.Env = append(os.Environ(), "LOOKOUT_SERVER="+srv.url, "LOOKOUT_TEST_CORPUS="+corpusAbs,
		"LOOKOUT_API_KEY=", "PYTHONPATH=.", "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nOK") || strings.Contains(string(out), "skipped") {
		t.Fatalf("python3 -m unittest: %v\n%s\nserver log:\n%s", err, out, srv.logs)
	}
	t.Logf("%s", out)
}

// TestPythonInstallOffline: pip installs ./python with no package index
// (the build backend is in the folder and needs nothing), into a venv.
func TestPythonInstallOffline(t *testing.T) {
	py := needPython(t)
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(py, "-m", "venv", venv).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv (Debian: apt-get install python3-venv): %v\n%s", err, out)
	}
	src, err := filepath.Abs("../../python")
	if err != nil {
		t.Fatal(err)
	}
	pip := exec.Command(filepath.Join(venv, "bin", "pip"), "install", "--no-index", "--disable-pip-version-check", src)
	pip.Env = append(os.Environ(), "PIP_NO_INDEX=1", "PIP_CONFIG_FILE=/dev/null")
	if out, err := pip.CombinedOutput(); err != nil {
		t.Fatalf("pip install --no-index ./python: %v\n%s", err, out)
	}
	check := exec.Command(filepath.Join(venv, "bin", "python"), "-c", "import lookout, sys; print(lookout.__version__, lookout.__file__)")
	check.Dir = t.TempDir() // not python/, so the import is the installed copy
	out, err := check.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "0.1.0 "+venv) {
		t.Fatalf("import lookout from the venv: %v\n%s", err, out)
	}
}
