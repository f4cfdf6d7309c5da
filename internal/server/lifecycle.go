package server

import (
	"context"
	"fmt"
)

// The server's background work, started by Start and stopped by Close, in
// one place: evaluation runs (eval.Runs), the builder of traces received
// as spans (spans.go), the monitor of the search index's backlog
// (backlog.go), the gateway's recorder of calls (gateway.go), which
// starts on the first recorded call, and the feed of changed traces
// between servers (live.go).

// Start starts the background work that an earlier server may have left:
// evaluation runs left running go on, and traces whose spans were
// accepted get built (not with Config.NoBackground: other servers on the
// database do). Call Close when done, whether Start failed or not.
func (s *Server) Start(ctx context.Context) error {
	if feed, ok := s.st.(changeFeed); ok {
		s.live.startFeed(feed, feedHandlers{
			forget: func(ids []string) {
				for _, id := range ids {
					s.reads.forget(id)
				}
			},
			revoked: s.keys.clear,
			loginFailed: func(addr, name string) {
				s.loginsByAddr.fail(addr)
				s.loginsByName.fail(name)
			},
		}, s.log)
	}
	if !s.noBackground {
		if err := s.ResumeRuns(ctx); err != nil {
			return fmt.Errorf("resuming evaluation runs: %w", err)
		}
		s.StartSpanBuilder()
	}
	s.monitor.start()
	return nil
}

// Close stops the background work and waits for it: runs in progress stop
// and stay "running" in the store, pending traces stay marked, both for
// the next server to take up; the gateway's queued calls are written.
// Nothing starts after it. Safe to call more than once, or without Start.
func (s *Server) Close() {
	s.StopRuns()
	s.stopSpanBuilder()
	s.monitor.close()
	s.closeGateway()
	s.live.stopFeed()
}
