package main

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadmeFirstHour runs README's "A new user's first hour" block, as
// written, in a copy of the checkout: build, serve, install the Python
// client, push from Python, list. The browser step is an HTTP request for
// the dataset's page and the API's view of the dataset.
func TestReadmeFirstHour(t *testing.T) {
	needPython(t)
	for _, tool := range []string{"bash", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing", tool)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- first-hour:begin -->\n```sh\n(.*?)```\n<!-- first-hour:end -->").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no first-hour block between its markers")
	}
	block := string(m[1])

	dir := filepath.Join(t.TempDir(), "lookout")
	copyCheckout(t, "../..", dir)
	// A git repository of the copy: make build stamps its commit, and what
	// the block leaves behind must be in .gitignore.
	git := func(args ...string) string {
		t.Helper()
		c := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		c.Dir = dir
		b, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", args[0], err, b)
		}
		return string(b)
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "copy")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// Another test or a developer's server may hold port 8000.
	block = strings.ReplaceAll(block, "127.0.0.1:8000", addr)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LOOKOUT_SERVER=http://"+addr, "LOOKOUT_API_KEY=", "PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1")
	// Files, not pipes: the block leaves serve running in the background
	// with them open. Its own process group, to stop serve afterwards.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGTERM) })
	runErr := cmd.Wait()
	log, _ := os.ReadFile(out.Name())
	if runErr != nil {
		t.Fatalf("the first-hour block: %v\n%s", runErr, log)
	}
	for _, re := range []string{
		`\[\{.*'hits': \['messages\.0\.content:17-23'\].*\}\]`, // the Python search
		`(?m)^local\s+first-hour\s+1\s+private\s`,              // lookout datasets
		`(?m)^lookout \S+, commit [0-9a-f]{12} \(`,             // lookout version
	} {
		if !regexp.MustCompile(re).Match(log) {
			t.Errorf("output has no match for %s:\n%s", re, log)
		}
	}

	// The browser step: the dataset's page, and the API it reads.
	get := func(path string) (*http.Response, []byte) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, page := get("/datasets/local/first-hour")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(page), "<script") {
		t.Errorf("the dataset's page: %d %s\n%.300s", resp.StatusCode, resp.Header.Get("Content-Type"), page)
	}
	_, body := get("/api/v1/datasets?name=first-hour")
	var list struct {
		Datasets []struct {
			Owner      string `json:"owner"`
			TraceCount int    `json:"trace_count"`
			ID         string `json:"id"`
		} `json:"datasets"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Datasets) != 1 || list.Datasets[0].TraceCount != 1 || list.Datasets[0].Owner != "local" {
		t.Fatalf("the dataset through the API: %v %s", err, body)
	}
	_, body = get("/api/v1/datasets/" + list.Datasets[0].ID + "/traces")
	if !strings.Contains(string(body), `"model":"gpt-4o"`) {
		t.Errorf("the trace list lacks the pushed metadata: %s", body)
	}
	if _, err := os.Stat(filepath.Join(dir, "lookout.db")); err != nil {
		t.Errorf("serve kept its data elsewhere than ./lookout.db: %v", err)
	}
	if st := git("status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("the block leaves files that .gitignore does not cover:\n%s", st)
	}
}

// copyCheckout copies the source tree from src to dst without what a build
// does not need (git data, node packages, generated data, earlier builds).
func copyCheckout(t *testing.T, src, dst string) {
	t.Helper()
	skip := map[string]bool{".git": true, "node_modules": true, ".venv": true, "__pycache__": true}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if skip[d.Name()] || rel == filepath.Join("bench", "data") || rel == "lookout" || strings.HasPrefix(d.Name(), "lookout.db") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}
