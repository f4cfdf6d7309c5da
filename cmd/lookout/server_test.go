package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/server"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// startServer serves the database db in-process over loopback HTTP.
func startServer(t *testing.T, db string) string {
	t.Helper()
	st, err := openStore(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hs := httptest.NewServer(server.New(server.Config{Store: st}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestPushAndExport(t *testing.T) {
	for _, b := range cliBackends(t) {
		t.Run(b.name, func(t *testing.T) { pushAndExport(t, b.db(t)) })
	}
}

func pushAndExport(t *testing.T, db string) {
	url := startServer(t, db)
	tau := testcorpus.File(t, "openai/tau-bench/gpt-4o-airline.json")
	webarena := testcorpus.File(t, "openai/explorer/webarena.jsonl")

	code, out, errOut := runCLI(t, "", "push", "--server", url, "--dataset", "bench", "--batch", "64", tau, webarena)
	if code != 0 {
		t.Fatalf("push exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if !regexp.MustCompile(`^pushed 202 traces \([0-9.]+ MiB\) from 2 files to dataset "bench" in \S+ \(\d+ traces/s\); 0 rejected\n$`).MatchString(out) {
		t.Errorf("summary line %q", out)
	}
	if errOut != "" {
		t.Errorf("stderr not empty (no terminal, so no progress bar): %q", errOut)
	}

	// Export: an Invariant JSONL file with the metadata line (from
	// webarena's dataset metadata) that validate reads back whole.
	code, exported, errOut := runCLI(t, "", "export", "--server", url, "--dataset", "bench")
	if code != 0 {
		t.Fatalf("export exit %d: %s", code, errOut)
	}
	first, _, _ := strings.Cut(exported, "\n")
	if !strings.HasPrefix(first, `{"metadata":{`) {
		t.Errorf("first line is not the dataset metadata: %.200s", first)
	}
	code, got, _ := runCLI(t, exported, "validate", "--format", "invariant", "-")
	if code != 0 || !strings.HasPrefix(got, "-: 202 traces, 5337 events") {
		t.Errorf("validate of the export: exit %d: %s", code, got)
	}
	// The exported traces are the pushed ones, in order.
	_, wantCanon, _ := runCLI(t, "", "convert", "--to", "canonical", tau, webarena)
	_, gotCanon, _ := runCLI(t, exported, "convert", "--to", "canonical", "-")
	// Ids and indexes are the server's; the rest must be equal.
	strip := func(line string) string {
		var tr trace.Trace
		if err := tr.UnmarshalJSON([]byte(line)); err != nil {
			t.Fatal(err)
		}
		tr.ID, tr.Index = "", nil
		return string(trace.AppendTrace(nil, &tr))
	}
	traceLines := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			var m map[string]json.RawMessage
			if json.Unmarshal([]byte(l), &m) != nil || m["events"] != nil {
				out = append(out, l) // a trace, not the dataset metadata line
			}
		}
		return out
	}
	wantLines, gotLines := traceLines(wantCanon), traceLines(gotCanon)
	if len(gotLines) != len(wantLines) || len(wantLines) != 202 {
		t.Fatalf("canonical export has %d traces, want %d", len(gotLines), len(wantLines))
	}
	for i, w := range wantLines {
		g := gotLines[i]
		if strip(g) != strip(w) {
			t.Fatalf("trace %d differs:\n got %.300s\nwant %.300s", i, g, w)
		}
	}

	// -o FILE
	outFile := filepath.Join(t.TempDir(), "out.jsonl")
	if code, _, errOut := runCLI(t, "", "export", "--server", url, "--dataset", "bench", "-o", outFile); code != 0 {
		t.Fatalf("export -o: %d %s", code, errOut)
	}
	if b, _ := os.ReadFile(outFile); string(b) != exported {
		t.Errorf("export -o wrote %d bytes, stdout had %d", len(b), len(exported))
	}

	// Unknown dataset: exit 2 with the reason.
	code, _, errOut = runCLI(t, "", "export", "--server", url, "--dataset", "nope")
	if code != 2 || !strings.Contains(errOut, `no dataset named "nope"`) {
		t.Errorf("export of an unknown dataset: exit %d: %s", code, errOut)
	}
}

func TestPushRejected(t *testing.T) {
	url := startServer(t, filepath.Join(t.TempDir(), "lookout.db"))
	// The good lines are stored, the bad one is reported with its place.
	in := "[{\"role\":\"user\",\"content\":\"hi\"}]\n[{\"role\":\"user\",\"content\":5}]\n[{\"role\":\"user\",\"content\":\"there\"}]\n"
	code, out, errOut := runCLI(t, in, "push", "--server", url, "--dataset", "mixed", "-")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	if !regexp.MustCompile(`^-:2:\d+: \$\[0\]\.content: `).MatchString(errOut) {
		t.Errorf("stderr %q does not place the error", errOut)
	}
	if !strings.Contains(out, "pushed 2 traces") || !strings.Contains(out, "; 1 rejected") {
		t.Errorf("summary %q", out)
	}
	// A file in no readable format is rejected input too.
	chatml := testcorpus.File(t, "otel/langfuse/autogen-2025-06-06.chatml.json")
	if code, _, errOut := runCLI(t, "", "push", "--server", url, "--dataset", "mixed", chatml); code != 1 || !strings.Contains(errOut, "unsupported format langfuse-chatml") {
		t.Errorf("unsupported file: exit %d: %s", code, errOut)
	}
	// A missing file is exit 2.
	if code, _, _ := runCLI(t, "", "push", "--server", url, "--dataset", "mixed", "no/such.json"); code != 2 {
		t.Errorf("missing file: exit %d", code)
	}
	// Usage errors.
	if code, _, _ := runCLI(t, "", "push", "--dataset", "x", "f"); code != 2 {
		t.Errorf("no --server: exit %d", code)
	}
	if code, _, _ := runCLI(t, "", "push", "--server", "ftp://x", "--dataset", "x", "-"); code != 2 {
		t.Errorf("bad --server: exit %d", code)
	}
}

func TestUserAndKeyCreate(t *testing.T) {
	for _, b := range cliBackends(t) {
		t.Run(b.name, func(t *testing.T) { userAndKeyCreate(t, b.db(t)) })
	}
}

// userAndKeyCreate runs key create and user create on a new database.
func userAndKeyCreate(t *testing.T, db string) {
	ctx := context.Background()

	// In local mode the key belongs to the local user; stdout is the key only.
	code, out, errOut := runCLI(t, "", "key", "create", "--db", db, "--name", "laptop")
	if code != 0 {
		t.Fatalf("key create: exit %d: %s", code, errOut)
	}
	localKey := strings.TrimSuffix(out, "\n")
	if !regexp.MustCompile(`^lk_[A-Za-z0-9_-]{40,}$`).MatchString(localKey) {
		t.Fatalf("stdout %q is not just a key", out)
	}
	if !strings.Contains(errOut, `"laptop"`) || !strings.Contains(errOut, "local") {
		t.Errorf("stderr %q", errOut)
	}

	// user create: password from one line of stdin.
	code, out, errOut = runCLI(t, "s3cret pass\n", "user", "create", "--db", db, "alice")
	if code != 0 || out != "created user alice\n" {
		t.Fatalf("user create: exit %d: %s %s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "x\n", "user", "create", "--db", db, "alice"); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Errorf("duplicate user: exit %d: %s", code, errOut)
	}
	if code, _, _ := runCLI(t, "\n", "user", "create", "--db", db, "bob"); code != 1 {
		t.Errorf("empty password: exit %d", code)
	}
	if code, _, _ := runCLI(t, "pw\n", "user", "create", "--db", db, "local"); code != 2 {
		t.Errorf("reserved name: exit %d", code)
	}
	if code, _, _ := runCLI(t, "pw\n", "user", "create", "--db", db); code != 2 {
		t.Errorf("no name: exit %d", code)
	}

	// With one user, a key without --user is that user's.
	code, out, errOut = runCLI(t, "", "key", "create", "--db", db)
	if code != 0 || !strings.Contains(errOut, "for user alice") || !strings.HasPrefix(out, "lk_") {
		t.Fatalf("key create for the only user: exit %d: %s", code, errOut)
	}
	// A key for alice.
	code, out, errOut = runCLI(t, "", "key", "create", "--db", db, "--user", "alice")
	if code != 0 {
		t.Fatalf("key create --user alice: %d %s", code, errOut)
	}
	aliceKey := strings.TrimSpace(out)
	if code, _, _ := runCLI(t, "pw2\n", "user", "create", "--db", db, "carol"); code != 0 {
		t.Fatalf("second user: exit %d", code)
	}
	// With two users a key without --user is the first user's.
	code, out, errOut = runCLI(t, "", "key", "create", "--db", db, "--name", "first")
	if code != 0 || !strings.Contains(errOut, "for user alice") || !regexp.MustCompile(`^lk_[A-Za-z0-9_-]{40,}\n$`).MatchString(out) {
		t.Errorf("key create with two users and no --user: exit %d: %q %s", code, out, errOut)
	}
	firstKey := strings.TrimSpace(out)
	if code, _, errOut := runCLI(t, "", "key", "create", "--db", db, "--user", "carol"); code != 0 || !strings.Contains(errOut, "for user carol") {
		t.Errorf("key create --user carol: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "key", "create", "--db", db, "--user", "nobody"); code != 2 || !strings.Contains(errOut, "nobody") {
		t.Errorf("key for an unknown user: exit %d: %s", code, errOut)
	}

	// Against a server over the same database: local mode is over, alice's
	// key and password work, the key made in local mode is alice's now
	// (the first user took over what local mode made).
	url := startServer(t, db)
	c, _ := client.New(url, client.WithAPIKey(aliceKey))
	me, err := c.Me(ctx)
	if err != nil || me.User == nil || me.User.Name != "alice" || me.Via != "key" || me.LocalMode {
		t.Fatalf("me with alice's key: %+v %v", me, err)
	}
	anon, _ := client.New(url)
	if _, err := anon.Login(ctx, "alice", "s3cret pass"); err != nil {
		t.Fatalf("login: %v", err)
	}
	if me, err := anon.Me(ctx); err != nil || me.Via != "session" {
		t.Fatalf("me after login: %+v %v", me, err)
	}
	fc, _ := client.New(url, client.WithAPIKey(firstKey))
	if me, err := fc.Me(ctx); err != nil || me.User == nil || me.User.Name != "alice" {
		t.Fatalf("me with the key made for the first user: %+v %v", me, err)
	}
	lc, _ := client.New(url, client.WithAPIKey(localKey))
	if me, err := lc.Me(ctx); err != nil || me.User == nil || me.User.Name != "alice" {
		t.Fatalf("me with the key made in local mode: %+v %v", me, err)
	}
	// Without a key, a push is refused now: exit 2 with the server's reason.
	t.Setenv("LOOKOUT_API_KEY", "")
	inbox := testcorpus.File(t, "seeds/invariant-inbox.json")
	code, _, errOut = runCLI(t, "", "push", "--server", url, "--dataset", "d", inbox)
	if code != 2 || !strings.Contains(errOut, "authentication required") {
		t.Errorf("push without a key: exit %d: %s", code, errOut)
	}
	// The key from the environment.
	t.Setenv("LOOKOUT_API_KEY", aliceKey)
	if code, out, errOut := runCLI(t, "", "push", "--server", url, "--dataset", "d", inbox); code != 0 || !strings.HasPrefix(out, "pushed 1 trace") {
		t.Errorf("push with LOOKOUT_API_KEY: exit %d: %s %s", code, out, errOut)
	}
	ds, err := c.Datasets(ctx, client.DatasetFilter{Mine: true})
	if err != nil || len(ds) != 1 || ds[0].Name != "d" || ds[0].Owner != "alice" || ds[0].TraceCount != 1 {
		t.Errorf("alice's datasets: %+v %v", ds, err)
	}
}

// readLine reads one line with a scanner (for child process output).
func readLine(sc *bufio.Scanner) string {
	if sc.Scan() {
		return sc.Text()
	}
	return ""
}

// TestServeDefaults: serve listens on loopback only, keeps its data in
// lookout.db and limits bodies to 64 MiB unless told otherwise.
func TestServeDefaults(t *testing.T) {
	cmd := newServeCmd()
	for flag, want := range map[string]string{"addr": "127.0.0.1:8000", "db": "lookout.db", "max-body": "64MiB"} {
		if got := cmd.Flags().Lookup(flag).DefValue; got != want {
			t.Errorf("--%s defaults to %q, want %q", flag, got, want)
		}
	}
	if n, err := server.ParseSize(cmd.Flags().Lookup("max-body").DefValue); err != nil || n != server.DefaultMaxBody || server.DefaultMaxBody != 64<<20 {
		t.Errorf("the default --max-body is %d bytes (%v)", n, err)
	}
	if code, _, errOut := runCLI(t, "", "serve", "--max-body", "lots"); code != 2 || !strings.Contains(errOut, "--max-body") {
		t.Errorf("serve --max-body lots: exit %d: %s", code, errOut)
	}

	// Without --db, key create (like serve) makes lookout.db in the current
	// directory, a SQLite file in WAL mode.
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, errOut := runCLI(t, "", "key", "create")
	if code != 0 || !strings.HasPrefix(out, "lk_") {
		t.Fatalf("key create without --db: exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 100 || string(b[:16]) != "SQLite format 3\x00" || b[18] != 2 || b[19] != 2 {
		t.Errorf("lookout.db is not a WAL-mode SQLite file")
	}
}

// TestServeMaxBody: `lookout serve --max-body` sets the limit; a larger
// body gets a 413 that names it.
func TestServeMaxBody(t *testing.T) {
	srv := startChild(t, filepath.Join(t.TempDir(), "lookout.db"), "--max-body", "2KiB")
	if !strings.HasPrefix(srv.url, "http://127.0.0.1:") {
		t.Errorf("serving %s", srv.url)
	}
	c, err := client.New(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	small := json.RawMessage(`{"events":[{"role":"user","content":"fits"}]}`)
	if ids, err := c.PushTraces(ctx, "limits", []json.RawMessage{small}); err != nil || len(ids) != 1 {
		t.Fatalf("a small push: %v %v", ids, err)
	}
	big := json.RawMessage(`{"events":[{"role":"user","content":"` + strings.Repeat("x", 3<<10) + `"}]}`)
	_, err = c.PushTraces(ctx, "limits", []json.RawMessage{big})
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 413 || ae.Code != "body_too_large" || !strings.Contains(ae.Message, "2KiB") {
		t.Fatalf("a push over --max-body 2KiB: %v", err)
	}
	srv.kill(t)
}

// TestUserCreatePrompt runs `lookout user create` on a terminal (a
// pseudo-terminal made by script(1), from util-linux): the password is asked
// for twice, and the user can then log in with it; different answers create
// no user.
func TestUserCreatePrompt(t *testing.T) {
	scriptPath, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("this test needs script(1) (Debian: bsdutils, which is essential): %v", err)
	}
	db := filepath.Join(t.TempDir(), "lookout.db")
	onTerminal := func(input, name string) (int, string) {
		t.Helper()
		cmd := exec.Command(scriptPath, "-qec", fmt.Sprintf("'%s' user create --db '%s' %s", os.Args[0], db, name), "/dev/null")
		cmd.Env = append(os.Environ(), "LOOKOUT_TEST_MAIN=1")
		cmd.Stdin = strings.NewReader(input)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	code, out := onTerminal("typed secret\ntyped secret\n", "alice")
	if code != 0 || !strings.Contains(out, "Password for alice: ") || !strings.Contains(out, "Repeat the password: ") || !strings.Contains(out, "created user alice") {
		t.Fatalf("user create on a terminal: exit %d:\n%s", code, out)
	}
	code, out = onTerminal("one\ntwo\n", "bob")
	if code != 2 || !strings.Contains(out, "the passwords differ") {
		t.Fatalf("different passwords: exit %d:\n%s", code, out)
	}
	url := startServer(t, db)
	ctx := context.Background()
	c, _ := client.New(url)
	if _, err := c.Login(ctx, "alice", "typed secret"); err != nil {
		t.Fatalf("login with the password typed at the prompt: %v", err)
	}
	if _, err := c.Login(ctx, "bob", "one"); err == nil {
		t.Fatal("bob was created although the passwords differed")
	}
}

// TestServePricesFile: a malformed --prices file stops serve at start with
// the file and the JSON path of the mistake.
func TestServePricesFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "prices.json")
	if err := os.WriteFile(bad, []byte(`{"models":{"gpt-4o":{"input":"cheap","output":1}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "", "serve", "--prices", bad, "--db", filepath.Join(dir, "lookout.db"), "--addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errOut, bad) || !strings.Contains(errOut, `:1:30: $.models["gpt-4o"].input: input must be a number`) {
		t.Errorf("serve --prices with a bad file: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "lookout.db")); err == nil {
		t.Error("serve opened the database before reading its price file")
	}
}
