package api

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
)

// Pagination: a list route takes ?limit (1 to maxLimit, default
// defaultLimit) and ?cursor, and answers {"items": [...], "next_cursor":
// C}; C is null on the last page, else the cursor of the next one. A
// cursor is opaque to clients (it names the last row seen).
const (
	defaultLimit = 50
	maxLimit     = 200
)

// pageReq is a list request's page.
type pageReq struct {
	limit int
	last  int64 // the id of the last row the cursor names, 0 for the first page
}

// page is a list answer.
type page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// readPage reads ?limit and ?cursor; it answers a bad one itself (400)
// and returns false.
func readPage(w http.ResponseWriter, r *http.Request) (pageReq, bool) {
	q := r.URL.Query()
	p := pageReq{limit: defaultLimit}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			writeProblem(w, invalid("limit", "limit is a whole number from 1 to "+strconv.Itoa(maxLimit)))
			return p, false
		}
		p.limit = n
	}
	if v := q.Get("cursor"); v != "" {
		id, ok := decodeCursor(v)
		if !ok {
			writeProblem(w, invalid("cursor", "cursor is not one this API gave out"))
			return p, false
		}
		p.last = id
	}
	return p, true
}

// cursorPrefix marks the API's cursors.
const cursorPrefix = "id:"

func encodeCursor(id int64) *string {
	c := base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(id, 10)))
	return &c
}

func decodeCursor(c string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	v, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(v, 10, 64)
	return id, err == nil && id > 0
}

// pageOf builds the answer from rows fetched with limit+1: the extra row
// only says there is a next page, whose cursor names the last row shown.
func pageOf[R, T any](rows []R, limit int, id func(R) int64, conv func(R) T) page[T] {
	out := page[T]{Items: make([]T, 0, min(len(rows), limit))}
	for i, row := range rows {
		if i == limit {
			out.NextCursor = encodeCursor(id(rows[limit-1]))
			break
		}
		out.Items = append(out.Items, conv(row))
	}
	return out
}

// pathID reads the {id} path value; it answers one that is not a
// positive whole number itself (400) and returns false.
func pathID(w http.ResponseWriter, r *http.Request, what string) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeProblem(w, invalid("id", "a "+what+" id is a positive whole number"))
		return 0, false
	}
	return id, true
}
