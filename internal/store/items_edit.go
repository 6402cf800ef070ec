package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"

	"gorm.io/gorm"

	"github.com/feedmail/feedmail/internal/model"
)

// Edited posts: every item is stored with a fingerprint of its version
// (Fingerprint). A poll that finds an item it knows with another
// fingerprint sends an ItemEdit, and the poll's write (step 2b, after the
// inserts) updates the stored item: a digest or an instant email not sent
// yet renders from the item when it goes out, so it carries the latest
// version; one already sent is not sent again (nothing is routed). An item
// stored before fingerprints were (content_hash '') gets one on first
// sight without counting as an edit.

// Fingerprint is the fingerprint of an item's version: hex of the first
// 16 bytes of a sha256 over its title, content and media, each length
// prefixed so that moving text from one to the other changes it.
func Fingerprint(title, content string, m model.ItemMedia) string {
	h := sha256.New()
	var num [24]byte
	for _, part := range [...]string{title, content, m.Encode()} {
		h.Write(append(strconv.AppendInt(num[:0], int64(len(part)), 10), ':'))
		_, _ = io.WriteString(h, part)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// ItemEdit is a new version of an item the feed already recorded, by
// identity. Fill marks the first fingerprint of an item stored without
// one: only the fingerprint is written and it is not an edit.
type ItemEdit struct {
	Identity    string
	Title       string
	Content     string
	Media       model.ItemMedia
	ContentHash string
	Fill        bool
}

// KnownItemHashes returns, for those of identities feedID has already
// recorded, their stored fingerprint ("" for an item stored before
// fingerprints were), in one query per chunk.
func (s *Store) KnownItemHashes(ctx context.Context, feedID int64, identities []string) (map[string]string, error) {
	known := make(map[string]string)
	c := s.psConn(ctx)
	for start, chunk := 0, s.psChunkOf(len(identities)); start < len(identities); start += chunk {
		part := identities[start:min(start+chunk, len(identities))]
		q := s.psNew().sql("SELECT identity, content_hash FROM items WHERE feed_id = ").arg(feedID, "bigint").sql(" AND identity")
		inList(q, part, "text")
		rows, err := q.query(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("known items of feed %d: %w", feedID, err)
		}
		for rows.Next() {
			var id, hash string
			if err := rows.Scan(&id, &hash); err != nil {
				rows.Close()
				return nil, err
			}
			known[id] = hash
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return known, nil
}

// updateEditedItems is step 2b of a poll's write: it writes the edits of
// the records that are written and counts the real edits (not fills) that
// changed a row in each outcome (Edited). One statement per edit: edits
// are rare, and a fill happens once per old item.
func (s *Store) updateEditedItems(ctx context.Context, c gorm.ConnPool, recs []PollRecord, outs []PollOutcome) error {
	for i := range recs {
		if outs[i].Lost {
			continue
		}
		for _, e := range recs[i].Edits {
			q := s.psNew()
			if e.Fill {
				q.sql("UPDATE items SET content_hash = ").arg(e.ContentHash, "text").sql(" WHERE content_hash = '' AND feed_id = ")
			} else {
				q.sql("UPDATE items SET title = ").arg(e.Title, "text").sql(", content = ").arg(e.Content, "text").
					sql(", media = ").arg(e.Media.Encode(), "text").sql(", content_hash = ").arg(e.ContentHash, "text").
					sql(" WHERE content_hash <> ").arg(e.ContentHash, "text").sql(" AND feed_id = ")
			}
			q.arg(recs[i].FeedID, "bigint").sql(" AND identity = ").arg(e.Identity, "text")
			n, err := q.exec(ctx, c)
			if err != nil {
				return fmt.Errorf("update edited item of feed %d: %w", recs[i].FeedID, err)
			}
			if !e.Fill {
				outs[i].Edited += n
			}
		}
	}
	return nil
}
