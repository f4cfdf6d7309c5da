package chat

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/chat/chattest"
)

func TestComplete(t *testing.T) {
	fake := chattest.New(t, func(r *chattest.Request) chattest.Reply { return chattest.Reply{Content: "hello " + r.User()} })
	ep := &Endpoint{URL: fake.URL + "/", APIKey: "sk-1", Model: "m1"}
	got, err := ep.Complete(context.Background(), Request{
		Messages:    []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "bob"}},
		Temperature: 0.2, MaxTokens: 50, JSON: true,
	})
	if err != nil || got != "hello bob" {
		t.Fatalf("Complete = %q, %v", got, err)
	}
	r := fake.Requests()[0]
	if r.Model != "m1" || r.Authorization != "Bearer sk-1" || r.ResponseFormat != "json_object" || r.MaxTokens != 50 ||
		r.Temperature == nil || *r.Temperature != 0.2 || r.System() != "be brief" {
		t.Errorf("request %+v", r)
	}
	// the request's model wins; no key, no JSON, no limit: none sent
	ep = &Endpoint{URL: fake.URL, Model: "m1"}
	if _, err := ep.Complete(context.Background(), Request{Model: "m2", Messages: []Message{{Role: "user", Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	r = fake.Requests()[1]
	if r.Model != "m2" || r.Authorization != "" || r.ResponseFormat != "" || r.MaxTokens != 0 || r.Temperature == nil || *r.Temperature != 0 {
		t.Errorf("request %+v", r)
	}
}

func TestCompleteErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		reply chattest.Reply
		is    error
		want  string
	}{
		{"status", chattest.Reply{Status: 401, Body: `{"error":"bad key"}`}, nil, `status 401: {"error":"bad key"}`},
		{"not JSON", chattest.Reply{Body: "<html>"}, ErrMalformed, "not a chat completion"},
		{"no choices", chattest.Reply{Body: `{"choices": []}`}, ErrMalformed, "not a chat completion"},
		{"no content", chattest.Reply{Body: `{"choices": [{"message": {"role": "assistant"}}]}`}, ErrMalformed, "not a chat completion"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := chattest.New(t, func(*chattest.Request) chattest.Reply { return tc.reply })
			_, err := (&Endpoint{URL: fake.URL, Model: "m"}).Complete(ctx, Request{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			var se *StatusError
			if tc.reply.Status != 0 && (!errors.As(err, &se) || se.Status != tc.reply.Status) {
				t.Errorf("not a StatusError: %v", err)
			}
		})
	}
}

func TestCompleteDeadline(t *testing.T) {
	fake := chattest.New(t, func(*chattest.Request) chattest.Reply { return chattest.Reply{Hang: true} })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := (&Endpoint{URL: fake.URL, Model: "m"}).Complete(ctx, Request{})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer before the deadline") {
		t.Fatalf("err %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
}

func TestRateLimit(t *testing.T) {
	t.Run("Retry-After is honoured", func(t *testing.T) {
		var n atomic.Int32
		fake := chattest.New(t, func(*chattest.Request) chattest.Reply {
			if n.Add(1) == 1 {
				return chattest.Reply{Status: http.StatusTooManyRequests, RetryAfter: "1"}
			}
			return chattest.Reply{Content: "ok"}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		got, err := (&Endpoint{URL: fake.URL, Model: "m"}).Complete(ctx, Request{})
		if err != nil || got != "ok" {
			t.Fatalf("got %q, %v", got, err)
		}
		rs := fake.Requests()
		if len(rs) != 2 || rs[1].At.Sub(rs[0].At) < 900*time.Millisecond {
			t.Fatalf("%d requests, the retry %s after the 429 that asked for 1s", len(rs), rs[len(rs)-1].At.Sub(rs[0].At))
		}
	})
	t.Run("backoff without Retry-After", func(t *testing.T) {
		var n atomic.Int32
		fake := chattest.New(t, func(*chattest.Request) chattest.Reply {
			if n.Add(1) <= 3 {
				return chattest.Reply{Status: http.StatusTooManyRequests}
			}
			return chattest.Reply{Content: "ok"}
		})
		ep := &Endpoint{URL: fake.URL, Model: "m", backoff: 20 * time.Millisecond}
		got, err := ep.Complete(context.Background(), Request{})
		rs := fake.Requests()
		if err != nil || got != "ok" || len(rs) != 4 {
			t.Fatalf("got %q, %v after %d requests", got, err, len(rs))
		}
		// 20ms, 40ms, 80ms
		if d := rs[3].At.Sub(rs[2].At); d < 70*time.Millisecond {
			t.Errorf("third wait %s, want doubled backoff (80ms)", d)
		}
	})
	t.Run("until the deadline", func(t *testing.T) {
		fake := chattest.New(t, func(*chattest.Request) chattest.Reply {
			return chattest.Reply{Status: http.StatusTooManyRequests, RetryAfter: "1", Body: `{"error":"slow down"}`}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := (&Endpoint{URL: fake.URL, Model: "m"}).Complete(ctx, Request{})
		if !errors.Is(err, ErrRateLimited) || !strings.Contains(err.Error(), "would pass the deadline") || !strings.Contains(err.Error(), "slow down") {
			t.Fatalf("err %v", err)
		}
		// it gives up as soon as the next wait cannot fit, not at the deadline
		if n := fake.Count(); n < 1 || n > 2 {
			t.Errorf("%d requests, want 1 or 2 (a 1s wait fits once in 1.5s)", n)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("took %s", time.Since(start))
		}
	})
	t.Run("bounded without a deadline", func(t *testing.T) {
		fake := chattest.New(t, func(*chattest.Request) chattest.Reply {
			return chattest.Reply{Status: http.StatusTooManyRequests, RetryAfter: "0"}
		})
		_, err := (&Endpoint{URL: fake.URL, Model: "m"}).Complete(context.Background(), Request{})
		if !errors.Is(err, ErrRateLimited) || fake.Count() != maxAttempts {
			t.Fatalf("err %v after %d requests", err, fake.Count())
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
	}{
		{"", -1}, {"soon", -1}, {"-3", -1}, {"0", 0}, {"2", 2 * time.Second}, {"1.5", 1500 * time.Millisecond},
		{"3600", 2 * time.Minute},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	} {
		if got := parseRetryAfter(tc.h, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tc.h, got, tc.want)
		}
	}
}
