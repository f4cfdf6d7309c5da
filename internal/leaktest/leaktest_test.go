package leaktest

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckFindsGoroutinesLeftRunning(t *testing.T) {
	check := Start()
	stop := make(chan struct{})
	go leftRunning(stop)
	err := check()
	if err == nil || !strings.Contains(err.Error(), "leftRunning") {
		t.Fatalf("a goroutine left running: want an error naming it, got %v", err)
	}
	if code := Check(0, check); code != 1 {
		t.Errorf("passing tests that leave a goroutine: exit code %d, want 1", code)
	}
	close(stop)
	if err := check(); err != nil {
		t.Errorf("after the goroutine ended: %v", err)
	}
	if code := Check(0, check); code != 0 {
		t.Errorf("nothing left: exit code %d, want 0", code)
	}
	if code := Check(3, func() error { return errors.New("leak") }); code != 3 {
		t.Errorf("failing tests keep their exit code: got %d, want 3", code)
	}
}

func leftRunning(stop chan struct{}) { <-stop }
