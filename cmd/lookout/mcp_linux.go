package main

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes Linux send the MCP server SIGTERM when lookout
// mcp dies without passing a signal on (SIGKILL).
func setParentDeathSignal(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
