package server

import (
	"mime"
	"net/http"
	"strings"
	"testing"
)

// TestValidName: names that look like other names are refused.
func TestValidName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"agents", true},
		{"tau-bench airline (v2)", true},
		{"données", true},
		{"日本語のデータ", true},
		{"", false},
		{" leading", false},
		{"trailing ", false},
		{"\tindented", false},
		{"evil\u202Egnp.exe", false}, // right-to-left override
		{"zero\u200Bwidth", false},
		{"joiner\u200Dname", false},
		{"bom\uFEFF", false},
		{"line\u2028sep", false},
		{"nul\x00", false},
		{"bad\xffutf8", false},
		{strings.Repeat("a", 201), false},
	} {
		err := validName("dataset name", c.name)
		if (err == nil) != c.ok {
			t.Errorf("validName(%q) = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// TestAttachment: the download name reaches the client exactly (filename*)
// and old clients get a harmless ASCII name.
func TestAttachment(t *testing.T) {
	for _, name := range []string{"d.jsonl", "données 2026.jsonl", `quote" and ; semicolon.jsonl`, "日本.jsonl", "100%.jsonl", "a/b\\c.jsonl"} {
		cd := attachment(name)
		typ, params, err := mime.ParseMediaType(cd)
		if err != nil || typ != "attachment" {
			t.Fatalf("%q: %q does not parse: %v", name, cd, err)
		}
		if want := safeFileName(name); params["filename"] != want {
			t.Errorf("%q: filename* decodes to %q, want %q (%s)", name, params["filename"], want, cd)
		}
		ascii := cd[:strings.Index(cd, "; filename*=")]
		for _, r := range ascii {
			if r > 0x7e || r < 0x20 {
				t.Errorf("%q: the fallback filename is not ASCII: %q", name, ascii)
			}
		}
	}
}

// TestLookalikeDatasetNames: the API refuses them with 422.
func TestLookalikeDatasetNames(t *testing.T) {
	f := sqliteFixture(t, Config{})
	f.addUser("alice")
	for _, name := range []string{"evil\u202Etxt", " spaced", "zw\u200B"} {
		r := f.doJSON("POST", "/api/v1/datasets", "alice", `{"name": "`+strings.ReplaceAll(name, "\u202E", `\u202e`)+`"}`)
		if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.String(), "dataset name") {
			t.Errorf("dataset %q: %d %s", name, r.status, r)
		}
	}
}
