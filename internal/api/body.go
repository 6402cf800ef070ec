package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// maxBody caps a request body.
const maxBody = 64 << 10

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// readJSON decodes r's body, a single JSON object of at most maxBody
// bytes with no member v does not know, into v. It answers the request
// itself (400 or 413 problem, 415 for another media type) and returns
// false when the body is unusable.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeProblem(w, problem{Status: http.StatusUnsupportedMediaType, Detail: "send the body as application/json"})
			return false
		}
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeProblem(w, problem{Status: http.StatusRequestEntityTooLarge, Detail: fmt.Sprintf("the body is over %d bytes", maxBody)})
		return false
	}
	if err != nil {
		writeProblem(w, invalid("", "the body could not be read"))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeProblem(w, invalid("", "the body is not the JSON object this route takes: "+err.Error()))
		return false
	}
	if dec.More() {
		writeProblem(w, invalid("", "the body holds more than one JSON value"))
		return false
	}
	return true
}

// optional is a member of a PATCH body: Set when present, Null when it
// was JSON null (which clears what it names).
type optional[T any] struct {
	Set, Null bool
	V         T
}

// UnmarshalJSON records that the member was present.
func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.V)
}
