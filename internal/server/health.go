package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
)

// Health endpoints for load balancers and orchestrators, outside /api/v1
// and without authentication (they tell nothing about the data):
//
//	GET /healthz  → 200 {"status": "ok"} while the process serves
//	GET /readyz   → 200 {"status": "ready"} when the database answers
//	                (its schema was migrated before the server started
//	                serving); else 503 with Retry-After
//
// A replica whose database is unreachable stays alive (healthz), so that
// it is not restarted, but leaves the balancer's rotation (readyz).

// pingStore is what readyz asks of the store.
type pingStore interface {
	Ping(ctx context.Context) error
}

// readyTimeout bounds readyz's ping: a probe must not hang behind a
// database host that does not answer.
const readyTimeout = 2 * time.Second

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.st.Ping(ctx); err != nil {
		if r.Context().Err() == nil {
			// Whatever the cause (refused, timed out, locked), not ready.
			err = fmt.Errorf("readyz: %w (%v)", store.ErrUnavailable, err)
		}
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
