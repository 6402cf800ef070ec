package api

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the API's OpenAPI 3.1 document, written by hand next to the
// handlers; the tests validate it and hold every answer to it.
//
//go:embed openapi.json
var OpenAPI []byte

// openAPI is GET /api/v1/openapi.json (no token needed).
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(OpenAPI)
}
