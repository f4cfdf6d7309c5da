package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/lookout-dev/lookout/internal/gateway/mcp"
	"github.com/lookout-dev/lookout/internal/store"
)

// The MCP proxy: Lookout between MCP clients and servers that speak the
// Streamable HTTP transport (internal/gateway/mcp), as Invariant's gateway
// routes them.
//
//	POST, GET, DELETE /api/v1/gateway/mcp/streamable
//
// The server is named by a header: Invariant's MCP-Server-Base-URL (the
// endpoint is that URL with "/mcp/" appended, as Invariant's gateway
// does) or Lookout-MCP-Server-URL (the endpoint itself). The dataset is
// Lookout-Dataset or Invariant's Invariant-Project-Name (created on first
// use). Auth: Invariant-Authorization: Bearer <key>, Invariant-API-Key:
// <key>, Authorization: Bearer <key>, or local mode; headers named
// Invariant-X-MCP-Server-<NAME> go to the server as <NAME> (its own
// credentials), and nothing else of the client's but the transport's own
// headers (Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID).
//
// Each MCP session is one trace; every tools/call is a step of the
// session (gatewayStep, as POST /api/v1/gateway/{dataset}/steps) before it
// reaches the server, and so is its result before the client sees it.

// mcpServerHeaderPrefix marks the client's headers meant for the server.
const mcpServerHeaderPrefix = "Invariant-X-Mcp-Server-"

// mcpProxy is the server's MCP proxy, made on first use.
func (s *Server) mcpProxy() *mcp.HTTPProxy {
	s.mcpOnce.Do(func() {
		s.mcp = &mcp.HTTPProxy{
			Client:     s.gw.proxy.Client,
			MaxMessage: int(min(s.maxBody, 1<<30)),
			Logf: func(format string, args ...any) {
				s.log.Info("mcp proxy: " + fmt.Sprintf(format, args...))
			},
		}
	})
	return s.mcp
}

// mcpRoute serves /api/v1/gateway/mcp/...
func (s *Server) mcpRoute(w http.ResponseWriter, r *http.Request) {
	if err := s.serveMCP(w, r); err != nil {
		s.writeError(w, r, err)
	}
}

func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) error {
	switch sub := strings.TrimPrefix(r.URL.Path, "/api/v1/gateway/mcp/"); {
	case sub == "streamable":
	case sub == "sse" || strings.HasPrefix(sub, "sse/"):
		return errorf(http.StatusNotFound, codeNotFound, "the MCP proxy speaks the Streamable HTTP transport only: use /api/v1/gateway/mcp/streamable")
	default:
		return errorf(http.StatusNotFound, codeNotFound, "no MCP proxy route %s: use /api/v1/gateway/mcp/streamable", r.URL.Path)
	}
	target, err := mcpServerURL(r.Header)
	if err != nil {
		return err
	}
	p, err := s.mcpPrincipal(r)
	if err != nil {
		return err
	}
	name := r.Header.Get("Lookout-Dataset")
	if name == "" {
		name = r.Header.Get("Invariant-Project-Name")
	}
	if name == "" {
		return errorf(http.StatusBadRequest, codeBadRequest, "the MCP proxy needs the dataset: send the Lookout-Dataset (or Invariant-Project-Name) header")
	}
	if err := validName("dataset name", name); err != nil {
		return err
	}
	d, err := s.datasetForPush(r.Context(), p, name)
	if err != nil {
		return err
	}
	meta, _ := json.Marshal(map[string]string{"mcp_transport": "streamable-http", "mcp_server_url": target.Redacted()})
	s.mcpProxy().Serve(w, r, mcp.Target{
		URL:      target.String(),
		Header:   mcpServerHeader(r.Header),
		Scope:    p.User.ID + "\x00" + d.ID,
		Stepper:  mcpStepper{s: s, p: p, dataset: d.Name},
		Metadata: meta,
	})
	return nil
}

// mcpServerURL is the MCP server's endpoint, from Lookout-MCP-Server-URL
// (as is) or MCP-Server-Base-URL (with "/mcp/" appended).
func mcpServerURL(h http.Header) (*url.URL, error) {
	raw, header := h.Get("Lookout-Mcp-Server-Url"), "Lookout-MCP-Server-URL"
	if raw == "" {
		raw, header = h.Get("Mcp-Server-Base-Url"), "MCP-Server-Base-URL"
		if raw != "" {
			raw = strings.TrimRight(raw, "/") + "/mcp/"
		}
	}
	if raw == "" {
		return nil, errorf(http.StatusBadRequest, codeBadRequest, "the MCP proxy needs the server: send MCP-Server-Base-URL (the endpoint is it + /mcp/) or Lookout-MCP-Server-URL (the endpoint)")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errorf(http.StatusBadRequest, codeBadRequest, "%s %q: want an http:// or https:// URL", header, raw)
	}
	return u, nil
}

// mcpServerHeader are the headers for the MCP server: each
// Invariant-X-MCP-Server-<NAME> as <NAME>.
func mcpServerHeader(in http.Header) http.Header {
	out := http.Header{}
	for k, v := range in {
		if len(k) > len(mcpServerHeaderPrefix) && strings.EqualFold(k[:len(mcpServerHeaderPrefix)], mcpServerHeaderPrefix) {
			out[http.CanonicalHeaderKey(k[len(mcpServerHeaderPrefix):])] = v
		}
	}
	return out
}

// mcpPrincipal finds who calls: Invariant's headers first (their keys are
// Lookout keys), then the API's own auth (a key, or local mode).
func (s *Server) mcpPrincipal(r *http.Request) (*principal, error) {
	if r.Header.Get("Invariant-Authorization") != "" {
		return s.gatewayPrincipal(r, "", http.Header{})
	}
	if key := strings.TrimSpace(r.Header.Get("Invariant-Api-Key")); key != "" {
		u, err := s.st.UserByAPIKey(r.Context(), HashSecret(key))
		if errors.Is(err, store.ErrNotFound) {
			return nil, errorf(http.StatusUnauthorized, codeUnauthorized, "invalid or revoked Lookout API key in Invariant-API-Key")
		}
		if err != nil {
			return nil, err
		}
		return &principal{User: u, Via: "key"}, nil
	}
	p, err := s.authenticate(r)
	if err != nil {
		return nil, err
	}
	return p, s.requireUser(r, p)
}

// mcpStepper makes the proxy's steps in process: the same step as POST
// /api/v1/gateway/{dataset}/steps.
type mcpStepper struct {
	s       *Server
	p       *principal
	dataset string
}

func (m mcpStepper) Step(ctx context.Context, req mcp.StepRequest) (mcp.StepResult, error) {
	res, err := m.s.gatewayStep(ctx, m.p, m.dataset, req.Session, req.Events, req.Metadata)
	if err != nil {
		return mcp.StepResult{}, err
	}
	viol, err := json.Marshal(res.Violations)
	if err != nil {
		return mcp.StepResult{}, err
	}
	return mcp.StepResult{TraceID: res.TraceID, First: res.First, Blocked: res.Blocked, Message: res.Message, Violations: viol}, nil
}

// mcpStore is what the MCP proxy asks of the store.
type mcpStore interface {
	UserByAPIKey(ctx context.Context, hash string) (store.User, error)
}
