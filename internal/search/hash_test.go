package search

import (
	"crypto/sha256"
	"testing"
)

// HashPieces gives each piece the SHA-256 prefix of its text, the same for
// a text however often it repeats, and leaves hashes already set alone.
func TestHashPieces(t *testing.T) {
	d := Doc{Pieces: []Piece{{Text: "alpha"}, {Text: "beta"}, {Text: "alpha"}, {Text: ""}}}
	d.HashPieces()
	if len(d.Hashes) != len(d.Pieces) {
		t.Fatalf("%d hashes for %d pieces", len(d.Hashes), len(d.Pieces))
	}
	for i, p := range d.Pieces {
		sum := sha256.Sum256([]byte(p.Text))
		if d.Hashes[i] != TextHash(sum[:16]) {
			t.Errorf("piece %d (%q): hash %x, want %x", i, p.Text, d.Hashes[i], sum[:16])
		}
	}
	kept := []TextHash{{1}}
	d.Hashes = kept
	d.HashPieces()
	if &d.Hashes[0] != &kept[0] {
		t.Error("HashPieces replaced hashes already set")
	}
}
