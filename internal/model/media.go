package model

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// ItemMedia is what a feed said about an item's media, kept in items.media
// as JSON ("" when there is none): the files attached to it (RSS
// enclosures, Atom enclosure links, JSON Feed attachments, Media RSS
// content), a thumbnail, and a description (Media RSS or iTunes). The email
// links every enclosure, and shows the description and thumbnail when the
// item has no content of its own.
type ItemMedia struct {
	Enclosures []Enclosure `json:"enclosures,omitempty"`
	// Thumbnail is an absolute http(s) image URL, or "".
	Thumbnail string `json:"thumbnail,omitempty"`
	// Description is plain text, or HTML when DescriptionHTML is set.
	Description     string `json:"description,omitempty"`
	DescriptionHTML bool   `json:"description_html,omitempty"`
	// Player is where the item's video plays (a Media RSS player, a
	// YouTube watch page), absolute http(s); set, it makes the item a
	// video. "" when the feed named none.
	Player string `json:"player,omitempty"`
}

// Enclosure is one file attached to an item. Zero Length and Duration mean
// unknown.
type Enclosure struct {
	URL      string `json:"url"`
	Type     string `json:"type,omitempty"`     // MIME type as the feed gave it
	Length   int64  `json:"length,omitempty"`   // bytes
	Duration int64  `json:"duration,omitempty"` // seconds
}

// Empty reports whether m holds nothing worth storing.
func (m ItemMedia) Empty() bool {
	return len(m.Enclosures) == 0 && m.Thumbnail == "" && m.Description == "" && m.Player == ""
}

// Encode returns the text m is kept as: "" for empty media, else its JSON.
// The store's batch statements pass it as a parameter; Value gives the
// same to gorm.
func (m ItemMedia) Encode() string {
	if m.Empty() {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil { // cannot happen: strings, bools and integers only
		return ""
	}
	return string(b)
}

// Value returns m as the column holds it, JSON text ("" when empty).
func (m ItemMedia) Value() (driver.Value, error) { return m.Encode(), nil }

// Scan reads the JSON text of items.media. An empty or NULL column is no
// media; a value that is not valid JSON is an error.
func (m *ItemMedia) Scan(src any) error {
	*m = ItemMedia{}
	var b []byte
	switch v := src.(type) {
	case nil:
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("items.media: unexpected %T", src)
	}
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, m); err != nil {
		return fmt.Errorf("items.media: %w", err)
	}
	return nil
}
