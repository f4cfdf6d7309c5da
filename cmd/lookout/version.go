package main

import (
	"fmt"
	"runtime/debug"
)

// versionString describes this binary from its build info: the module
// version ("(devel)" for a build from a checkout), the VCS commit and time
// that `go build` stamps in a git checkout (with "+dirty" when the tree had
// changes), and the Go version.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "lookout (no build information)"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var commit, when string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	out := "lookout " + version
	if commit != "" {
		if len(commit) > 12 {
			commit = commit[:12]
		}
		if dirty {
			commit += "+dirty"
		}
		out += ", commit " + commit
		if when != "" {
			out += " (" + when + ")"
		}
	}
	return fmt.Sprintf("%s, %s", out, bi.GoVersion)
}
