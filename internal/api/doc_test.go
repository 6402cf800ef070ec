package api

import (
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIDocument: openapi.json is a valid OpenAPI 3.1 document
// (kin-openapi's validator, schemas as JSON Schema 2020-12) and documents
// exactly the routes the server has.
func TestOpenAPIDocument(t *testing.T) {
	doc := loadDoc(t)
	if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	var served []string
	for _, rt := range (&Server{}).routeTable() {
		served = append(served, rt.method+" "+strings.TrimSuffix(Prefix, "/")+"/"+rt.path)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("documented routes\n%q\nserved routes\n%q", documented, served)
	}
}

// TestOpenAPIServed: GET /api/v1/openapi.json needs no token and serves
// the embedded document as JSON.
func TestOpenAPIServed(t *testing.T) {
	h := newHarness(t, Limit{})
	w := h.do(call{method: "GET", path: "/api/v1/openapi.json"})
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || w.Body.String() != string(OpenAPI) {
		t.Fatalf("GET openapi.json: %d %q, %d bytes; want 200, application/json, the document", w.Code,
			w.Header().Get("Content-Type"), w.Body.Len())
	}
}
