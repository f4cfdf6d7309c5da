package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/testcorpus"
)

// TestServerFromEnv: client commands need no --server when $LOOKOUT_SERVER
// names one, and a server address without a scheme means http.
func TestServerFromEnv(t *testing.T) {
	url := startServer(t, cliBackends(t)[0].db(t))
	inbox := testcorpus.File(t, "seeds/invariant-inbox.json")

	t.Setenv("LOOKOUT_SERVER", url)
	if code, out, errOut := runCLI(t, "", "push", "--dataset", "env", inbox); code != 0 || !strings.Contains(out, "pushed 1 trace") {
		t.Fatalf("push with $LOOKOUT_SERVER: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "", "export", "--dataset", "env"); code != 0 || !strings.Contains(out, `"What's in my inbox?"`) {
		t.Fatalf("export with $LOOKOUT_SERVER: exit %d\n%s%s", code, out, errOut)
	}

	// --server wins over the environment; "host:port" is http://host:port.
	t.Setenv("LOOKOUT_SERVER", "http://127.0.0.1:1")
	bare := strings.TrimPrefix(url, "http://")
	for _, server := range []string{bare, bare + "/", "localhost:" + bare[strings.LastIndex(bare, ":")+1:]} {
		if code, out, errOut := runCLI(t, "", "export", "--server", server, "--dataset", "env"); code != 0 || !strings.Contains(out, "messages") {
			t.Errorf("export --server %s: exit %d\n%s%s", server, code, out, errOut)
		}
	}
}

// TestServerRefused: a server that is not there is named, with the command
// that would start it, and the exit status is 2.
func TestServerRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, args := range [][]string{
		{"export", "--server", addr, "--dataset", "x"},
		{"datasets", "--server", "http://" + addr},
		{"push", "--server", addr, "--dataset", "x", testcorpus.File(t, "seeds/invariant-inbox.json")},
	} {
		code, _, errOut := runCLI(t, "", args...)
		want := "is `lookout serve` running at http://" + addr + "?"
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, want 2 and %q in stderr:\n%s", args[0], code, want, errOut)
		}
	}
}

// TestListCommands: lookout datasets, key list and benchmark list against a
// server, as tables and as JSON lines.
func TestListCommands(t *testing.T) {
	db := cliBackends(t)[0].db(t)
	url := startServer(t, db)
	t.Setenv("LOOKOUT_SERVER", url)

	// Empty lists are a header only.
	if code, out, errOut := runCLI(t, "", "datasets"); code != 0 || out != "OWNER  NAME  TRACES  VISIBILITY  LAST PUSH  ID\n" {
		t.Fatalf("datasets on an empty server: exit %d %q %s", code, out, errOut)
	}

	traces := `{"messages":[{"role":"user","content":"a"}],"metadata":{"task_id":"t1","reward":1}}
{"messages":[{"role":"user","content":"b"}],"metadata":{"task_id":"t2","reward":0}}
`
	if code, _, errOut := runCLI(t, traces, "push", "--dataset", "runs", "-"); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "", "datasets")
	if code != 0 || !regexp.MustCompile(`(?m)^local\s+runs\s+2\s+private\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+[0-9a-f-]{36}$`).MatchString(out) {
		t.Fatalf("datasets: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "", "datasets", "--json", "--mine")
	var d struct {
		Name       string `json:"name"`
		TraceCount int    `json:"trace_count"`
	}
	if code != 0 || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &d) != nil || d.Name != "runs" || d.TraceCount != 2 {
		t.Fatalf("datasets --json: exit %d %q", code, out)
	}

	// key list: the server's keys of the caller, never the key itself.
	code, key, errOut := runCLI(t, "", "key", "create", "--db", db, "--name", "laptop")
	if code != 0 {
		t.Fatalf("key create: exit %d: %s", code, errOut)
	}
	key = strings.TrimSpace(key)
	code, out, errOut = runCLI(t, "", "key", "list")
	if code != 0 || !regexp.MustCompile(`(?m)^NAME\s+KEY\s+CREATED\s+LAST USED\s+REVOKED\s+ID\n^laptop\s+…`+regexp.QuoteMeta(key[len(key)-4:])+`\s+\d{4}-\d\d-\d\d \S+\s+-\s+-\s+[0-9a-f-]{36}$`).MatchString(out) || strings.Contains(out, key) {
		t.Fatalf("key list: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "", "key", "list", "--json", "--api-key", key); code != 0 || !strings.Contains(out, `"name":"laptop"`) || strings.Contains(out, key) {
		t.Fatalf("key list --json: exit %d %q", code, out)
	}

	// benchmark list: each version, newest first.
	dir := t.TempDir()
	criteria := filepath.Join(dir, "criteria.yaml")
	if err := os.WriteFile(criteria, []byte(benchmarkCriteria), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if code, out, errOut := runCLI(t, "", "benchmark", "create", "--dataset", "runs", "--name", "tasks", "--criteria", criteria); code != 0 {
			t.Fatalf("benchmark create: exit %d\n%s%s", code, out, errOut)
		}
	}
	code, out, errOut = runCLI(t, "", "benchmark", "list")
	if code != 0 || !regexp.MustCompile(`^BENCHMARK\s+TASKS\s+VISIBILITY\s+CREATED\s+ID\nlocal/tasks@2\s+2\s+private\s+.*\nlocal/tasks@1\s+2\s+private\s+.*\n$`).MatchString(out) {
		t.Fatalf("benchmark list: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "", "benchmark", "list", "--json"); code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"version":2`) {
		t.Fatalf("benchmark list --json: exit %d %q", code, out)
	}

	// Once users exist, a list without a key is refused with the reason.
	if code, _, errOut := runCLI(t, "pw\n", "user", "create", "--db", db, "alice"); code != 0 {
		t.Fatalf("user create: %s", errOut)
	}
	if code, _, errOut := runCLI(t, "", "key", "list"); code != 2 || !strings.Contains(errOut, "401") {
		t.Errorf("key list without a key once users exist: exit %d: %s", code, errOut)
	}
	// An export without a key of a private dataset says a key is missing,
	// not only that there is no such dataset; with the key it works.
	if code, _, errOut := runCLI(t, "", "export", "--dataset", "runs"); code != 2 || !strings.Contains(errOut, "anonymous: pass an API key (--api-key or LOOKOUT_API_KEY)") {
		t.Errorf("export without a key once users exist: exit %d: %s", code, errOut)
	}
	if code, out, errOut := runCLI(t, "", "export", "--dataset", "runs", "--api-key", key); code != 0 || strings.Count(out, "\n") < 2 {
		t.Errorf("export with the key: exit %d: %s %s", code, out, errOut)
	}
}

// TestVersion: lookout version and --version print the same line, with the
// Go version; the commit comes from the build info when go build stamped it.
func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "", "version")
	if code != 0 || !strings.HasPrefix(out, "lookout ") || !strings.HasSuffix(out, runtime.Version()+"\n") {
		t.Fatalf("version: exit %d %q", code, out)
	}
	if code, out2, _ := runCLI(t, "", "--version"); code != 0 || out2 != out {
		t.Errorf("--version: exit %d %q, want %q", code, out2, out)
	}

	tests := []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "lookout (devel), go1.26.8"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0ba5f10e66814f12decb3caf6b758134b5cc4268"}, {Key: "vcs.time", Value: "2026-11-25T19:29:50Z"}, {Key: "vcs.modified", Value: "false"},
		}}, "lookout v0.3.0, commit 0ba5f10e6681 (2026-11-25T19:29:50Z), go1.26.8"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0ba5f10e6681"}, {Key: "vcs.modified", Value: "true"},
		}}, "lookout (devel), commit 0ba5f10e6681+dirty, go1.26.8"},
	}
	for _, tc := range tests {
		if got := versionOf(&tc.bi); got != tc.want {
			t.Errorf("versionOf = %q, want %q", got, tc.want)
		}
	}
}

// TestPushMetadataOnly: a file holding only a metadata line makes the
// dataset, with that metadata, as a push of traces would.
func TestPushMetadataOnly(t *testing.T) {
	url := startServer(t, cliBackends(t)[0].db(t))
	code, out, errOut := runCLI(t, `{"metadata": {"owner": "team"}}`+"\n", "push", "--server", url, "--dataset", "fresh", "-")
	if code != 0 || !strings.HasPrefix(out, "pushed 0 traces") {
		t.Fatalf("push of metadata only: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "datasets", "--server", url, "--json")
	if code != 0 || !strings.Contains(out, `"name":"fresh"`) || !strings.Contains(out, `"owner":"team"`) {
		t.Fatalf("datasets after a metadata-only push: exit %d\n%s%s", code, out, errOut)
	}
}

// TestPushIndexClash: traces whose explicit indexes the dataset already
// holds stop the push (exit 1), named by file, line and index, and the
// summary counts them as not stored rather than reporting nothing
// rejected; --on-conflict skip leaves them out and append gives them new
// indexes, each reported by its place, with exit 0.
func TestPushIndexClash(t *testing.T) {
	url := startServer(t, cliBackends(t)[0].db(t))
	file := testcorpus.File(t, "openai/explorer/code.jsonl")
	if code, _, errOut := runCLI(t, "", "push", "--server", url, "--dataset", "d", file); code != 0 {
		t.Fatalf("first push: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "", "push", "--server", url, "--dataset", "d", file)
	if code != 1 || !strings.Contains(out, "pushed 0 traces") || !strings.Contains(out, "; 1 not stored (the push stopped: see below)") ||
		!strings.Contains(errOut, file+`:2:1: index 1 is taken (dataset "d" or an earlier trace of this push has it)`) || strings.Contains(errOut, "UNIQUE") {
		t.Fatalf("a push of taken indexes: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "push", "--server", url, "--dataset", "d", "--on-conflict", "skip", file)
	if code != 0 || !strings.Contains(out, "pushed 0 traces") || !strings.Contains(out, "; 0 rejected; 1 skipped (index taken)\n") ||
		errOut != file+`:2:1: index 1 is taken in dataset "d": skipped`+"\n" {
		t.Fatalf("--on-conflict skip: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "push", "--server", url, "--dataset", "d", "--on-conflict", "append", file, file)
	if code != 0 || !strings.Contains(out, "pushed 2 traces") || !strings.Contains(out, "; 2 given new indexes (theirs were taken)") ||
		errOut != file+`:2:1: index 1 is taken in dataset "d": stored as index 2`+"\n"+file+`:2:1: index 1 is taken in dataset "d": stored as index 3`+"\n" {
		t.Fatalf("--on-conflict append: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "", "push", "--server", url, "--dataset", "d", "--on-conflict", "replace", file); code != 2 || !strings.Contains(errOut, "--on-conflict must be fail, skip or append") {
		t.Fatalf("--on-conflict replace: exit %d: %s", code, errOut)
	}
}
