package newitems

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"strings"
)

// jsonFeedExtras is what Parse reads from a JSON document itself: whether
// it is a JSON Feed at all, and the WebSub hub gofeed does not keep.
type jsonFeedExtras struct {
	hub   string
	doc   []byte // the document, with non-string item ids made strings
	items int    // entries of its "items" array
}

// readJSONFeedExtras checks that a JSON document is a JSON Feed: an object
// whose "version" names jsonfeed.org, or, failing a version, that has an
// "items" array. It also coerces non-string item ids to strings, as the JSON
// Feed spec asks readers to (gofeed would reject a numeric id).
func readJSONFeedExtras(doc []byte) (*jsonFeedExtras, error) {
	var head struct {
		Version any `json:"version"`
		Hubs    []struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"hubs"`
		Items []struct {
			ID stdjson.RawMessage `json:"id"`
		} `json:"items"`
	}
	if err := stdjson.Unmarshal(doc, &head); err != nil {
		var typeErr *stdjson.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return nil, fmt.Errorf("%w: %w", ErrNotAFeed, err)
		}
		// A field of the wrong type (say a string where hubs should be):
		// fall back to the version alone.
		var v struct {
			Version any `json:"version"`
		}
		if err := stdjson.Unmarshal(doc, &v); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotAFeed, err)
		}
		head.Version, head.Hubs, head.Items = v.Version, nil, nil
	}
	version, _ := head.Version.(string)
	if !strings.Contains(version, "jsonfeed.org/version") && head.Items == nil {
		return nil, fmt.Errorf("%w: JSON document is not a JSON Feed (version %q)", ErrNotAFeed, version)
	}
	x := &jsonFeedExtras{doc: doc, items: len(head.Items)}
	for _, h := range head.Hubs {
		if strings.EqualFold(strings.TrimSpace(h.Type), "websub") && strings.TrimSpace(h.URL) != "" {
			x.hub = h.URL
			break
		}
	}
	for _, it := range head.Items {
		id := bytes.TrimSpace(it.ID)
		if len(id) > 0 && id[0] != '"' && !bytes.Equal(id, []byte("null")) {
			x.doc = coerceJSONIDs(doc)
			break
		}
	}
	return x, nil
}

// coerceJSONIDs rewrites a JSON Feed so that every item id is a string.
// It returns doc unchanged if the rewrite fails.
func coerceJSONIDs(doc []byte) []byte {
	var m map[string]any
	d := stdjson.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return doc
	}
	items, _ := m["items"].([]any)
	for _, it := range items {
		o, ok := it.(map[string]any)
		if !ok {
			continue
		}
		switch v := o["id"].(type) {
		case nil, string:
		case stdjson.Number:
			o["id"] = v.String()
		default:
			b, err := stdjson.Marshal(v)
			if err != nil {
				return doc
			}
			o["id"] = string(b)
		}
	}
	out, err := stdjson.Marshal(m)
	if err != nil {
		return doc
	}
	return out
}
