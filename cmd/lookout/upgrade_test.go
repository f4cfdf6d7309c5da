package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
)

// previousBinary builds `lookout` as it was before the newest migration,
// from the repository's history, and returns its path and commit.
func previousBinary(t *testing.T) (string, string) {
	t.Helper()
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", args...).Output()
		return strings.TrimSpace(string(out)), err
	}
	root, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		t.Fatalf("the repository: %v", err)
	}
	// Possible only with the history: a shallow clone (or an archive)
	// lacks the commit before the newest migration.
	if shallow, _ := git("-C", root, "rev-parse", "--is-shallow-repository"); shallow == "true" {
		t.Skip("a shallow clone: no commit before the newest migration to build")
	}
	newest, err := git("-C", root, "log", "-1", "--format=%H", "--", "internal/store/postgres/migrations", "internal/store/sqlite/migrations")
	if err != nil || newest == "" {
		t.Fatalf("the newest migration's commit: %q, %v", newest, err)
	}
	prev, err := git("-C", root, "rev-parse", "--verify", "--quiet", newest+"^")
	if err != nil {
		t.Skipf("no commit before %s, the newest migration's", newest[:12])
	}
	dir := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, prev, dir)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", prev, err, out)
	}
	bin := filepath.Join(dir, "lookout-previous")
	// go test puts its own go first in the PATH of what it runs.
	build := exec.Command("go", "build", "-o", bin, "./cmd/lookout")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", prev, err, out)
	}
	return bin, prev[:12]
}

// startPrevious starts the previous binary's `lookout serve` on db.
func startPrevious(t *testing.T, bin, db string) *child {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--quiet")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOOKOUT_TEST_MAIN=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	c, err := startServe(t, cmd)
	if err != nil {
		t.Fatalf("the previous binary on the new schema: %v", err)
	}
	return c
}

// TestUpgradeKeepsPrevious: the previous release (here: the binary of the
// commit before the newest migration) keeps working on a schema the new
// one migrated, as the rule for migrations promises (README, "Upgrade"):
// on PostgreSQL the two run side by side, as in a rolling upgrade, each
// reading and searching what the other wrote; on SQLite the previous one
// opens the file the new one migrated (a rollback) and the new one reads
// what it wrote.
func TestUpgradeKeepsPrevious(t *testing.T) {
	bin, commit := previousBinary(t)
	t.Logf("previous binary: %s", commit)
	t.Run("postgres", func(t *testing.T) {
		db := pgtest.URL(t)
		cur := startChild(t, db) // migrates to the newest schema
		prev := startPrevious(t, bin, db)
		writeAndRead(t, prev.url, "previous", 0)
		writeAndRead(t, cur.url, "current", 1)
		writeAndRead(t, prev.url, "previous", 2)
		readBoth(t, []string{prev.url, cur.url}, 3)
	})
	t.Run("sqlite", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "lookout.db")
		cur := startChild(t, db)
		writeAndRead(t, cur.url, "current", 0)
		cur.kill(t)
		prev := startPrevious(t, bin, db)
		writeAndRead(t, prev.url, "previous", 1)
		readBoth(t, []string{prev.url}, 2)
		prev.kill(t)
		cur = startChild(t, db)
		readBoth(t, []string{cur.url}, 2)
	})
}

// writeAndRead pushes round's traces and a trace of OpenTelemetry spans
// through base into dataset "upgrade", and reads them back.
func writeAndRead(t *testing.T, base, who string, round int) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	var traces []json.RawMessage
	for i := range 3 {
		traces = append(traces, json.RawMessage(fmt.Sprintf(`{"events":[{"role":"user","content":"round%d item%d by %s zu%dx%d"},{"role":"assistant","content":"ok"}],"metadata":{"round":%d}}`, round, i, who, round, i, round)))
	}
	ids, err := c.PushTraces(ctx, "upgrade", traces)
	if err != nil || len(ids) != 3 {
		t.Fatalf("round %d: push through the %s binary: %v", round, who, err)
	}
	// Each round's spans are long enough to be stored compressed by a
	// release that writes compressed parts; from round 1 a span joins
	// the previous round's trace, written by the other binary, whose
	// stored spans this one must read to rebuild it.
	filler := strings.Repeat(" the agent looked the flight up again", 20)
	spans := []otlpSpan{{fmt.Sprintf("%032x", round+1), fmt.Sprintf("%016x", round+1), "", "chat gpt-4o", 1_000_000_000, map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
		"gen_ai.input.messages": fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"spans of round%d zv%d%s"}]}]`, round, round, filler)}}}
	if round > 0 {
		spans = append(spans, otlpSpan{fmt.Sprintf("%032x", round), fmt.Sprintf("%016x", 100+round), fmt.Sprintf("%016x", round), "chat gpt-4o", 2_000_000_000, map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
			"gen_ai.input.messages": fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"joins round%d zx%d%s"}]}]`, round-1, round-1, filler)}})
	}
	body := otlpBody(spans...)
	req, _ := http.NewRequest("POST", base+"/v1/traces", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Lookout-Dataset", "upgrade")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("round %d: OTLP through the %s binary: %s", round, who, resp.Status)
	}
	post, err := http.Post(base+"/api/v1/traces/"+ids[0]+"/annotations", "application/json",
		strings.NewReader(fmt.Sprintf(`{"address":"messages.0.content","content":"noted in round %d"}`, round)))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusOK && post.StatusCode != http.StatusCreated {
		t.Fatalf("round %d: annotation through the %s binary: %s", round, who, post.Status)
	}
	readBoth(t, []string{base}, round+1)
}

// readBoth checks, through each base, that dataset "upgrade" holds the
// traces of rounds 0 to rounds-1 (three pushed and one from spans each),
// and that searches find each round's.
func readBoth(t *testing.T, bases []string, rounds int) {
	t.Helper()
	ctx := context.Background()
	for _, base := range bases {
		c, err := client.New(base)
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.FindDataset(ctx, "upgrade")
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.Traces(ctx, d.ID, "", 1000)
		if err != nil {
			t.Fatalf("%s: list: %v", base, err)
		}
		if len(p.Traces) != 4*rounds {
			t.Errorf("%s: %d traces listed after %d rounds, want %d", base, len(p.Traces), rounds, 4*rounds)
		}
		for r := range rounds {
			var roundTrace string // the trace of round r's spans
			for _, q := range []string{fmt.Sprintf("zu%dx", r), fmt.Sprintf("zv%d", r)} {
				found, err := c.Search(ctx, d.ID, q, "", 100)
				if err != nil {
					t.Fatalf("%s: search %q: %v", base, q, err)
				}
				want := 3
				if strings.HasPrefix(q, "zv") {
					want = 1
				}
				var got []string
				for _, tr := range found.Traces {
					got = append(got, tr.ID)
				}
				if len(got) != want || len(slices.Compact(slices.Sorted(slices.Values(got)))) != want {
					t.Errorf("%s: search %q found %d traces, want %d", base, q, len(got), want)
				}
				if want == 1 && len(got) == 1 {
					roundTrace = got[0]
				}
			}
			if r == rounds-1 {
				continue
			}
			// The span the next round added: in the same trace as the
			// round's own, which the build kept.
			q := fmt.Sprintf("zx%d", r)
			found, err := c.Search(ctx, d.ID, q, "", 100)
			if err != nil {
				t.Fatalf("%s: search %q: %v", base, q, err)
			}
			if len(found.Traces) != 1 || found.Traces[0].ID != roundTrace {
				var got []string
				for _, tr := range found.Traces {
					got = append(got, tr.ID)
				}
				t.Errorf("%s: the span the next round added to round %d's trace (%s): found in %v", base, r, roundTrace, got)
			}
		}
	}
}
