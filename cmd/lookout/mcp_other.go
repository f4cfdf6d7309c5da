//go:build !linux

package main

import "os/exec"

// setParentDeathSignal: only Linux has a parent-death signal; elsewhere the
// server ends when its input does.
func setParentDeathSignal(*exec.Cmd) {}
