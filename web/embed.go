// Package web holds the explorer UI, built by `make web` into dist/ and
// embedded in the binary, so that `go run ./cmd/lookout serve` needs no Node.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist is the built UI: index.html, favicon.svg and assets/.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded at build time; Sub fails only on a bad name
	}
	return sub
}
