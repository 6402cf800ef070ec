package newitems

import (
	"crypto/sha256"
	"encoding/hex"
)

// itemIdentity names an item within its feed: its GUID (RSS guid, Atom id,
// JSON Feed id) if it has one, else its link, else its title and content.
// The result is the lowercase hex SHA-256 of the chosen value with its kind
// folded into the hash input ("g:"+guid, "l:"+link, "h:"+title+NUL+content),
// so a GUID can never collide with a link or hash of the same text, and the
// title/content boundary is unambiguous. It is always 64 characters, which
// keeps the (feed, identity) unique key small. The GUID is compared exactly
// (after trimming): feeds that change the case of a GUID publish a new item.
func itemIdentity(guid, link, title, content string) string {
	h := sha256.New()
	switch {
	case guid != "":
		h.Write([]byte("g:"))
		h.Write([]byte(guid))
	case link != "":
		h.Write([]byte("l:"))
		h.Write([]byte(link))
	default:
		h.Write([]byte("h:"))
		h.Write([]byte(title))
		h.Write([]byte{0})
		h.Write([]byte(content))
	}
	return hex.EncodeToString(h.Sum(nil))
}
