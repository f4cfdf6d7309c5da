package server

import (
	"context"
	"net/http"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
)

type keyJSON struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Key       string     `json:"key,omitempty"` // only in the answer to create
	Last4     string     `json:"last4"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	LastUsed  *time.Time `json:"last_used,omitempty"`
}

func toKeyJSON(k store.APIKey) keyJSON {
	return keyJSON{ID: k.ID, Name: k.Name, Last4: k.Last4, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt, LastUsed: k.LastUsed}
}

// createKey makes an API key for the caller; the key is in this answer only.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	var name string
	if r.ContentLength != 0 {
		if _, err := decodeBody(r, map[string]member{"name": str(&name, "name")}); err != nil {
			return err
		}
	}
	if name == "" {
		name = "key"
	}
	if err := validName("key name", name); err != nil {
		return err
	}
	key, hash, last4 := NewAPIKey()
	k, err := s.st.CreateAPIKey(r.Context(), p.User.ID, name, hash, last4)
	if err != nil {
		return err
	}
	out := toKeyJSON(k)
	out.Key = key
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	keys, err := s.st.ListAPIKeys(r.Context(), p.User.ID)
	if err != nil {
		return err
	}
	out := make([]keyJSON, len(keys))
	for i, k := range keys {
		out[i] = toKeyJSON(k)
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": out})
	return nil
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	err := s.st.RevokeAPIKey(r.Context(), p.User.ID, r.PathValue("id"))
	// Forgotten even on failure: the revocation may have been written.
	s.keys.clear()
	s.live.keyRevoked() // and the other servers' caches
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// keyStore is what the API key handlers ask of the store.
type keyStore interface {
	CreateAPIKey(ctx context.Context, userID, name, hash, last4 string) (store.APIKey, error)
	ListAPIKeys(ctx context.Context, userID string) ([]store.APIKey, error)
	RevokeAPIKey(ctx context.Context, userID, keyID string) error
}
