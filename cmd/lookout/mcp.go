package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/gateway/mcp"
	"github.com/lookout-dev/lookout/internal/trace"
)

func newMCPCmd() *cobra.Command {
	var sf serverFlags
	var dataset string
	var failOpen bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "mcp --server URL [--api-key K] --dataset NAME [--fail-open] [--timeout D] -- COMMAND [ARG...]",
		Short: "Run a stdio MCP server behind Lookout's guardrails, recording its tool calls as a trace",
		Long: `mcp starts COMMAND, a stdio MCP server, and stands in for it: an MCP client
launches lookout mcp as if it were the server, and the JSON-RPC messages are
relayed both ways. Each run is one session, recorded as one trace of the
dataset NAME (created if missing):

  tools/call request   an assistant event with one tool call (id
                       "<session>/<JSON-RPC id>", name, arguments)
  its result           a tool event (content: the text items joined by
                       newlines; isError, structuredContent and the other
                       items in the event's metadata)
  tools/list result    a tools event {"tools": [...]}, which rules read as
                       Tool and ToolParameter

Each tool call is checked by the dataset's guardrails (POST
/api/v1/gateway/NAME/steps) before it reaches the server: when a policy in
block mode is violated the client gets a JSON-RPC error (code -32010,
message: the rule's) and the tool does not run. Results and tools lists are
checked the same way before the client sees them. Everything else passes
unchanged.

When Lookout cannot be reached or answers 5xx, calls and results are refused
(JSON-RPC error -32011 naming the cause); with --fail-open they pass
unchecked and a line on standard error says so. Other errors (a refused API
key) always refuse.

Standard output carries only JSON-RPC; diagnostics go to standard error with
the server's own. When the client closes standard input, the server's is
closed; SIGINT, SIGTERM and SIGHUP are passed on to the server. The exit
status is the server's (128+N when signal N ended it), or 2 when lookout mcp
cannot start it or the Lookout server refuses the API key.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateDatasetName(dataset); err != nil {
				return err
			}
			c, err := sf.client()
			if err != nil {
				return err
			}
			code := runMCP(cmdContext(cmd), mcpOptions{client: c, server: sf.serverURL(), dataset: dataset,
				failOpen: failOpen, timeout: timeout, command: args},
				cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset that records the session and whose guardrails check it (created if missing)")
	cmd.Flags().BoolVar(&failOpen, "fail-open", false, "let tool calls and results through unchecked while Lookout is unreachable or failing (default: refuse them)")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long one check may take before it counts as Lookout unreachable")
	_ = cmd.MarkFlagRequired("dataset")
	// The server's command line is not ours: flags stop at COMMAND.
	cmd.Flags().SetInterspersed(false)
	return cmd
}

type mcpOptions struct {
	client   *client.Client
	server   string
	dataset  string
	failOpen bool
	timeout  time.Duration
	command  []string
}

// stepper sends steps to a Lookout server.
type stepper struct {
	c       *client.Client
	dataset string
}

func (s stepper) Step(ctx context.Context, req mcp.StepRequest) (mcp.StepResult, error) {
	v, err := s.c.GatewayStep(ctx, s.dataset, client.GatewayStep{
		Session: req.Session, Events: trace.AppendEvents(nil, req.Events), Metadata: req.Metadata})
	if err != nil {
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status >= 500 || ae.Status == http.StatusTooManyRequests {
			// No answer, or the server failing: Lookout is unavailable.
			return mcp.StepResult{}, fmt.Errorf("%w: %v", mcp.ErrUnavailable, err)
		}
		return mcp.StepResult{}, err
	}
	return mcp.StepResult{TraceID: v.TraceID, First: v.First, Blocked: v.Blocked, Message: v.Message, Violations: v.Violations}, nil
}

// runMCP runs the server and relays until it exits; it returns the exit
// status.
func runMCP(ctx context.Context, o mcpOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	// The server writes to our standard error directly when it is a file;
	// any other writer is shared through a lock.
	if _, ok := stderr.(*os.File); !ok {
		stderr = &lockedWriter{w: stderr}
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "lookout mcp: "+format+"\n", args...)
	}
	if code := checkMCPAccess(ctx, o, logf); code != 0 {
		return code
	}

	child := exec.Command(o.command[0], o.command[1:]...)
	child.Stderr = stderr
	serverIn, err := child.StdinPipe()
	if err != nil {
		logf("%v", err)
		return exitInternal
	}
	serverOut, err := child.StdoutPipe()
	if err != nil {
		logf("%v", err)
		return exitInternal
	}
	// The parent-death signal goes with the thread that started the child.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	setParentDeathSignal(child)
	if err := child.Start(); err != nil {
		logf("cannot start the MCP server: %v", err)
		return exitInternal
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	done := make(chan struct{}) // signal.Stop does not close sigs
	defer close(done)
	go func() {
		for {
			select {
			case sig := <-sigs:
				_ = child.Process.Signal(sig)
			case <-done:
				return
			}
		}
	}()

	session := mcp.NewSession(mcp.Config{
		Session:     mcp.NewSessionID(),
		Stepper:     stepper{c: o.client, dataset: o.dataset},
		FailOpen:    o.failOpen,
		StepTimeout: o.timeout,
		Metadata:    []byte(`{"mcp_transport":"stdio"}`),
		Logf:        logf,
	})
	relay := &mcp.Stdio{Session: session, ClientIn: stdin, ClientOut: stdout, ServerIn: serverIn, ServerOut: serverOut, Logf: logf}
	if err := relay.Run(ctx); err != nil {
		// The client is gone: so is the server's reason to run.
		logf("%v", err)
		serverIn.Close()
	}
	err = child.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	logf("waiting for the MCP server: %v", err)
	return exitInternal
}

// checkMCPAccess asks the server who we are before starting: a refused API
// key, or none where one is needed, stops here (exit 2) rather than
// refusing every tool call later. An unreachable server only warns: calls
// are refused (or let through with --fail-open) while it is.
func checkMCPAccess(ctx context.Context, o mcpOptions, logf func(string, ...any)) int {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	me, err := o.client.Me(ctx)
	var ae *client.Error
	switch {
	case errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden):
		logf("the Lookout server at %s refused the API key: %v", o.server, err)
		return exitInternal
	case err != nil:
		what := "refused"
		if o.failOpen {
			what = "let through unchecked (--fail-open)"
		}
		logf("the Lookout server at %s does not answer now (%v): tool calls are %s until it does", o.server, err, what)
	case me.User == nil && !me.LocalMode:
		logf("the Lookout server at %s has users: pass --api-key or set LOOKOUT_API_KEY", o.server)
		return exitInternal
	}
	return 0
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
