package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/feedmail/feedmail/internal/channel/channels"
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
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || w.Body.String() != string(servedDoc(t)) {
		t.Fatalf("GET openapi.json: %d %q, %d bytes; want 200, application/json, the document", w.Code,
			w.Header().Get("Content-Type"), w.Body.Len())
	}
}

// TestOpenAPIChannels: the served document's Channel enum is email and
// the channels this build registers (Document fills it from the registry,
// so a new channel needs no edit of openapi.json), and the file itself
// stays a valid document listing email alone.
func TestOpenAPIChannels(t *testing.T) {
	doc := loadDoc(t)
	ref, ok := doc.Components.Schemas["Channel"]
	if !ok || ref.Value == nil {
		t.Fatal("openapi.json has no Channel schema")
	}
	var documented []string
	for _, v := range ref.Value.Enum {
		documented = append(documented, fmt.Sprint(v))
	}
	registered := channels.All().Names() // email first, then the registry
	slices.Sort(documented)
	slices.Sort(registered)
	if !slices.Equal(documented, registered) || len(registered) < 6 {
		t.Errorf("Channel enum %q; the channels of this build are %q", documented, registered)
	}
	file, err := openapi3.NewLoader().LoadFromData(openAPIFile)
	if err != nil {
		t.Fatalf("openapi.json does not load: %v", err)
	}
	if err := file.Validate(context.Background()); err != nil {
		t.Errorf("openapi.json as written is not a valid document: %v", err)
	}
}
