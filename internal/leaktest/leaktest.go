// Package leaktest fails a test binary whose tests leave goroutines
// running: a server, store or runner that outlives its Close, or a request
// whose work goes on after the client left. Call Main from TestMain, or
// Start before m.Run and the function it returns after (pgtest.Main does).
package leaktest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// ignored are goroutines the tests cannot stop, each named by a function
// on its stack, with the reason.
var ignored = []goleak.Option{
	// regexp2's shared clock for match timeouts runs until a second after
	// the last deadline any match asked for (the check's time budget), then
	// stops by itself; a short test run can end before it does.
	goleak.IgnoreAnyFunction("github.com/lookout-dev/lookout/internal/pyre/internal/regexp2.runClock"),
}

// Start notes the goroutines running before the tests (those started by
// package initialisation are not the tests' doing) and returns the check to
// run after them: an error listing every other goroutine still running.
func Start() func() error {
	current := goleak.IgnoreCurrent()
	return func() error {
		return goleak.Find(append([]goleak.Option{current}, ignored...)...)
	}
}

// Main runs the tests and exits; a run whose tests pass but leave
// goroutines behind fails.
func Main(m *testing.M) {
	check := Start()
	os.Exit(Check(m.Run(), check))
}

// Check turns a passing exit code into a failing one when check finds
// goroutines left running, printing them.
func Check(code int, check func() error) int {
	if code != 0 {
		return code // the failures say more than the goroutines they left
	}
	if err := check(); err != nil {
		fmt.Fprintf(os.Stderr, "leaktest: the tests left goroutines running:\n%v\n", err)
		return 1
	}
	return 0
}
