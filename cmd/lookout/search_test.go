package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/testcorpus"
)

func TestSearchCLI(t *testing.T) {
	for _, b := range cliBackends(t) {
		t.Run(b.name, func(t *testing.T) { searchCLI(t, b.db(t)) })
	}
}

func searchCLI(t *testing.T, db string) {
	url := startServer(t, db)
	tau := testcorpus.File(t, "openai/tau-bench/gpt-4o-airline.json")
	if code, _, errOut := runCLI(t, "", "push", "--server", url, "--dataset", "air", tau); code != 0 {
		t.Fatalf("push: %s", errOut)
	}
	// What the query should find, read from the file itself.
	const query = `tool:cancel_reservation (refund OR "full amount") -meta:reward=0`
	q, err := search.Parse(query)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(tau)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, _, err := formats.Open(f, tau, formats.Auto)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for i := 0; ; i++ {
		tr, err := dec.Next()
		if err != nil {
			break
		}
		d := search.Index(tr)
		if q.Match(&d, search.Props{Dataset: "air", Events: len(tr.Events)}) {
			want = append(want, i)
		}
	}
	if len(want) == 0 || len(want) > 100 {
		t.Fatalf("the query should pick a few traces of the file, not %d", len(want))
	}

	code, out, errOut := runCLI(t, "", "search", "--server", url, "--dataset", "air", "--json", query)
	if code != 0 {
		t.Fatalf("search exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d traces: %s", len(lines), len(want), out)
	}
	for i, line := range lines {
		var got struct {
			Index int64    `json:"index"`
			ID    string   `json:"id"`
			Hits  []string `json:"hits"`
		}
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}
		if got.Index != int64(want[i]) || len(got.ID) != 36 || len(got.Hits) == 0 {
			t.Errorf("line %d: %s; want index %d with an id and hits", i, line, want[i])
		}
	}
	if !strings.Contains(errOut, "match in air") {
		t.Errorf("stderr %q lacks the count", errOut)
	}

	// Text output, and --limit.
	code, out, _ = runCLI(t, "", "search", "--server", url, "--dataset", "air", "--limit", "1", "refund")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, ".content:") {
		t.Errorf("text search: exit %d: %q", code, out)
	}
	// Nothing found: exit 1.
	if code, out, _ := runCLI(t, "", "search", "--server", url, "--dataset", "air", "zzzz-nowhere"); code != 1 || out != "" {
		t.Errorf("no match: exit %d, %q; want 1 and nothing", code, out)
	}
	// A bad query: exit 2, the column and a caret, and no request.
	code, _, errOut = runCLI(t, "", "search", "--server", "http://127.0.0.1:1", "--dataset", "air", "refund (cancel")
	if code != 2 || !strings.Contains(errOut, "column 8: this \"(\" is never closed\n  refund (cancel\n         ^\n") {
		t.Errorf("bad query: exit %d: %q", code, errOut)
	}
	// A policy the dataset lacks: the server's 400, shown the same way.
	code, _, errOut = runCLI(t, "", "search", "--server", url, "--dataset", "air", `refund policy:"nope"`)
	if code != 2 || !strings.Contains(errOut, `no saved policy named "nope"`) || !strings.Contains(errOut, "\n         ^\n") || strings.Count(errOut, "query: column") != 1 {
		t.Errorf("unknown policy: exit %d: %q", code, errOut)
	}
	// An unknown dataset.
	if code, _, errOut := runCLI(t, "", "search", "--server", url, "--dataset", "nope", "x"); code != 2 || !strings.Contains(errOut, `no dataset named "nope"`) {
		t.Errorf("unknown dataset: exit %d: %q", code, errOut)
	}
	// reindex rebuilds the same index.
	code, out, errOut = runCLI(t, "", "reindex", "--db", db)
	if code != 0 || !strings.HasPrefix(out, "indexed 200 traces") {
		t.Fatalf("reindex: exit %d: %q %q", code, out, errOut)
	}
	// A mistyped --db is an error, and no empty database is left behind.
	typo := filepath.Join(t.TempDir(), "lookuot.db")
	if code, _, errOut := runCLI(t, "", "reindex", "--db", typo); code != 2 || !strings.Contains(errOut, "no database at "+typo) {
		t.Errorf("reindex of a missing database: exit %d: %q", code, errOut)
	}
	if _, err := os.Stat(typo); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reindex of a missing database created %s (%v)", typo, err)
	}
	if code, again, _ := runCLI(t, "", "search", "--server", url, "--dataset", "air", "--json", query); code != 0 || again != strings.Join(lines, "\n")+"\n" {
		t.Errorf("after reindex: exit %d, results differ", code)
	}
}
