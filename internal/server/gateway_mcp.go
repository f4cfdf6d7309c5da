package server

import "net/http"

// mcpRoute proxies Streamable HTTP MCP servers under /api/v1/gateway/mcp/.
func (s *Server) mcpRoute(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, errorf(http.StatusNotFound, codeNotFound, "the MCP proxy is not in this build yet"))
}
