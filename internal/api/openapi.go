package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
)

// openAPIFile is the API's OpenAPI 3.1 document as written by hand next to
// the handlers, with "email" alone in the Channel enum (Document fills it).
//
//go:embed openapi.json
var openAPIFile []byte

// Document returns the OpenAPI document the server serves: the file with
// the Channel enum set to names, the channels this build delivers by, so
// that a new channel is registered in one place and the document follows.
// The error is for a file that is not the document it should be.
func Document(names []string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIFile, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	ch, ok := schemas["Channel"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi.json: no Channel schema")
	}
	ch["enum"] = names
	return json.MarshalIndent(doc, "", "  ")
}

// openAPI is GET /api/v1/openapi.json (no token needed).
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(s.doc)
}
