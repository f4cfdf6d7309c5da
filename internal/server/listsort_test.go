package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// TestListSortAPI: GET /datasets/{id}/traces?sort=&order= pages through
// the order the test computes (ties by index), ?offset= starts inside it,
// a cursor continues only its own sort, bad values are 400; rows carry
// verdicts and scores; the explorer's page and assets come gzip-encoded
// to a client that takes it.
func TestListSortAPI(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := newFixture(t, st, Config{})
	f.addUser("alice")
	ds := f.createDataset("alice", "sorted", false)
	// Tokens out 0..9 in a shuffled order with ties; trace 4 has none.
	tokens := []int{5, 3, 9, 3, -1, 7, 0, 5, 2, 8}
	var lines []string
	for i, n := range tokens {
		tr := map[string]any{"name": fmt.Sprint("t", i), "events": []any{map[string]any{"role": "user", "content": "hi"}}}
		if n >= 0 {
			tr["spans"] = []any{map[string]any{"id": "s", "name": "llm", "start_time": "2026-01-01T00:00:00Z", "end_time": fmt.Sprintf("2026-01-01T00:00:%02dZ", 10+n),
				"attributes": map[string]any{"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 0, "gen_ai.usage.output_tokens": n}}}
		}
		b, _ := json.Marshal(tr)
		lines = append(lines, string(b))
	}
	if r := f.do("POST", "/api/v1/datasets/"+ds+"/upload?filename=s.jsonl", "alice", strings.NewReader(strings.Join(lines, "\n")+"\n")); r.status != http.StatusOK && r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	type row struct {
		ID       string             `json:"id"`
		Index    int64              `json:"index"`
		Verdicts map[string]string  `json:"verdicts"`
		Scores   map[string]float64 `json:"scores"`
	}
	type page struct {
		Traces []row
		Next   string
	}
	walk := func(query string) []int64 {
		t.Helper()
		var out []int64
		cursor := ""
		for k := 0; k < 20; k++ {
			var p page
			f.must(http.StatusOK, "GET", "/api/v1/datasets/"+ds+"/traces?limit=3"+query+cursor, "alice", "").json(t, &p)
			for _, r := range p.Traces {
				out = append(out, r.Index)
			}
			if p.Next == "" {
				return out
			}
			cursor = "&cursor=" + p.Next
		}
		t.Fatal("the list does not end")
		return nil
	}
	// By tokens: -1 (none) lowest, ties by index, desc the reverse.
	asc := []int64{4, 6, 8, 1, 3, 0, 7, 5, 9, 2}
	if got := walk("&sort=tokens"); !slices.Equal(got, asc) {
		t.Errorf("tokens asc: %v, want %v", got, asc)
	}
	desc := slices.Clone(asc)
	slices.Reverse(desc)
	for _, q := range []string{"&sort=tokens&order=desc", "&sort=duration&order=desc", "&sort=cost&order=desc"} {
		if got := walk(q); !slices.Equal(got, desc) {
			t.Errorf("%s: %v, want %v", q, got, desc)
		}
	}
	if got := walk("&order=desc"); !slices.Equal(got, []int64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}) {
		t.Errorf("time desc: %v", got)
	}
	var p page
	f.must(http.StatusOK, "GET", "/api/v1/datasets/"+ds+"/traces?limit=3&sort=tokens&offset=4", "alice", "").json(t, &p)
	if len(p.Traces) != 3 || p.Traces[0].Index != asc[4] || p.Traces[2].Index != asc[6] {
		t.Errorf("offset 4: %+v", p.Traces)
	}
	var first page
	f.must(http.StatusOK, "GET", "/api/v1/datasets/"+ds+"/traces?limit=3&sort=tokens", "alice", "").json(t, &first)
	for _, q := range []string{"?sort=size", "?order=sideways", "?sort=cost&cursor=" + first.Next, "?cursor=" + first.Next, "?sort=tokens&offset=2&cursor=" + first.Next, "?offset=-1"} {
		f.must(http.StatusBadRequest, "GET", "/api/v1/datasets/"+ds+"/traces"+q, "alice", "")
	}

	// Scores: verdicts and means on the rows; a sort by one.
	ids := map[int64]string{}
	for _, r := range first.Traces {
		ids[r.Index] = r.ID
	}
	f.must(http.StatusOK, "GET", "/api/v1/datasets/"+ds+"/traces?limit=100", "alice", "").json(t, &p)
	for _, r := range p.Traces {
		ids[r.Index] = r.ID
	}
	for idx, v := range map[int64]string{0: "true", 1: "false", 2: "0.7", 3: "true"} {
		f.must(http.StatusCreated, "POST", "/api/v1/traces/"+ids[idx]+"/scores", "alice", `{"criterion":"ok","value":`+v+`}`)
	}
	f.must(http.StatusCreated, "POST", "/api/v1/traces/"+ids[3]+"/scores", "alice", `{"criterion":"ok","value":false,"address":"messages.0"}`)
	f.must(http.StatusOK, "GET", "/api/v1/datasets/"+ds+"/traces?limit=100", "alice", "").json(t, &p)
	got := map[int64]string{}
	for _, r := range p.Traces {
		if v, ok := r.Verdicts["ok"]; ok {
			got[r.Index] = fmt.Sprintf("%s %g", v, r.Scores["ok"])
		} else if s, ok := r.Scores["ok"]; ok {
			got[r.Index] = fmt.Sprintf("- %g", s)
		}
	}
	want := map[int64]string{0: "pass 1", 1: "fail 0", 2: "- 0.7", 3: "fail 0.5"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("verdicts and scores %v, want %v", got, want)
	}
	if got := walk("&sort=score:ok&order=desc"); !slices.Equal(got, []int64{0, 2, 3, 1, 9, 8, 7, 6, 5, 4}) {
		t.Errorf("score:ok desc: %v", got)
	}

	// Compression: the page (with its first rows) and the script.
	pg := f.do("GET", "/datasets/alice/sorted?sort=tokens", "alice", nil, "Accept-Encoding", "gzip")
	if pg.status != http.StatusOK || pg.header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("page: %d %v", pg.status, pg.header)
	}
	html := gunzipT(t, pg.body)
	if !bytes.Contains(html, []byte(`/traces?limit=200\u0026sort=tokens`)) && !bytes.Contains(html, []byte(`/traces?limit=200&sort=tokens`)) {
		t.Errorf("the page's boot data has no list sorted by tokens: %.300s", html[bytes.Index(html, []byte("lookout-boot")):])
	}
	js := regexp.MustCompile(`/assets/[^"]+\.js`).Find(html)
	if js == nil {
		t.Fatal("no script in the page")
	}
	raw := f.do("GET", string(js), "", nil, "Accept-Encoding", "identity")
	z := f.do("GET", string(js), "", nil, "Accept-Encoding", "gzip, deflate")
	if raw.header.Get("Content-Encoding") != "" || z.header.Get("Content-Encoding") != "gzip" || !bytes.Equal(gunzipT(t, z.body), raw.body) || len(z.body) > len(raw.body)/2 {
		t.Errorf("script: %d bytes plain, %d gzip (%q)", len(raw.body), len(z.body), z.header.Get("Content-Encoding"))
	}
	if r := f.do("GET", string(js), "", nil, "Accept-Encoding", "gzip;q=0"); r.header.Get("Content-Encoding") != "" {
		t.Error("gzip;q=0 got gzip")
	}
}

func gunzipT(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
