package regexp2

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// catastrophic backtracks 2^n times at each 'x' of its subject.
func catastrophic(t *testing.T) (*Regexp, string) {
	t.Helper()
	re, err := Compile(`x(?!(a+)+$)`, None)
	if err != nil {
		t.Fatal(err)
	}
	return re, strings.Repeat("x"+strings.Repeat("a", 28)+"!", 4)
}

func TestContextCancelStopsMatch(t *testing.T) {
	re, s := catastrophic(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := re.FindStringMatchContext(ctx, s)
	if !errors.Is(err, ErrCanceled) {
		t.Fatalf("want ErrCanceled, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled search took %v", d)
	}
	// a context already done does not start a search
	if _, err := re.FindStringMatchContext(ctx, "x"); !errors.Is(err, ErrCanceled) {
		t.Fatalf("done context: want ErrCanceled, got %v", err)
	}
}

func TestContextDeadlineIsTheTimeout(t *testing.T) {
	re, s := catastrophic(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := re.FindStringMatchContext(ctx, s)
	if !errors.Is(err, ErrCanceled) && !errors.Is(err, ErrMatchTimeout) {
		t.Fatalf("want a timeout, got %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "aaaa") {
		t.Errorf("the error quotes the input: %v", err)
	}
}

func TestContextMatchesLikeUpstream(t *testing.T) {
	re := MustCompile(`(?<=a)b+`, None)
	m, err := re.FindStringMatchContext(context.Background(), "abbcab")
	var got []string
	for m != nil && err == nil {
		got = append(got, m.String())
		m, err = re.FindNextMatchContext(context.Background(), m)
	}
	if err != nil || strings.Join(got, ",") != "bb,b" {
		t.Fatalf("got %q, %v", got, err)
	}
}
