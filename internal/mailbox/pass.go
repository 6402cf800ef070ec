package mailbox

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// pass hands every message present in the selected mailbox (not marked
// \Deleted) to the handler, oldest UID first, moving each one to the done
// folder right after the handler accepted it. It returns how many were
// handled; a handler error stops the pass at that message, which stays for
// the next pass.
func (r *Reader) pass(ctx context.Context, s *session) (int, error) {
	found, err := s.c.UIDSearch(&imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagDeleted}}, nil).Wait()
	if err != nil {
		return 0, fmt.Errorf("mailbox: search: %w", err)
	}
	uids := found.AllUIDs()
	slices.Sort(uids)
	handled := 0
	for len(uids) > 0 {
		batch := uids[:min(len(uids), r.cfg.Batch)]
		uids = uids[len(batch):]
		start := r.cfg.Clock.Now()
		n, err := r.batch(ctx, s.c, batch)
		handled += n
		r.log.Info("mailbox batch", "handled", n, "of", len(batch), "left", len(uids),
			"took", r.cfg.Clock.Now().Sub(start), "err", err)
		if err != nil {
			return handled, err
		}
	}
	return handled, nil
}

// batch handles the messages of uids in order and returns how many it
// handled and moved, stopping at the first error.
func (r *Reader) batch(ctx context.Context, c *imapclient.Client, uids []imap.UID) (int, error) {
	n := 0
	for _, uid := range uids {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		raw, size, ok, err := r.fetch(c, uid)
		if err != nil {
			return n, err
		}
		if !ok {
			r.log.Debug("mailbox message gone before it was read", "uid", uid)
			continue
		}
		truncated := size > r.cfg.MaxBytes || int64(len(raw)) > r.cfg.MaxBytes
		if err := r.h(ctx, raw, truncated); err != nil {
			return n, fmt.Errorf("mailbox: handler, message uid %d: %w", uid, err)
		}
		if _, err := c.Move(imap.UIDSetNum(uid), r.cfg.DoneFolder).Wait(); err != nil {
			return n, fmt.Errorf("mailbox: move uid %d to %q: %w", uid, r.cfg.DoneFolder, err)
		}
		n++
		r.log.Debug("mailbox message handled", "uid", uid, "size", size, "truncated", truncated)
	}
	return n, nil
}

// fetch reads the message's size and at most MaxBytes of it, without
// marking it \Seen. ok is false when the message no longer exists.
func (r *Reader) fetch(c *imapclient.Client, uid imap.UID) (raw []byte, size int64, ok bool, err error) {
	body := &imap.FetchItemBodySection{Peek: true, Partial: &imap.SectionPartial{Offset: 0, Size: r.cfg.MaxBytes}}
	cmd := c.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{UID: true, RFC822Size: true, BodySection: []*imap.FetchItemBodySection{body}})
	msg := cmd.Next()
	if msg == nil {
		if err := cmd.Close(); err != nil {
			return nil, 0, false, fmt.Errorf("mailbox: fetch uid %d: %w", uid, err)
		}
		return nil, 0, false, nil
	}
	for item := msg.Next(); item != nil; item = msg.Next() {
		switch it := item.(type) {
		case imapclient.FetchItemDataRFC822Size:
			size = it.Size
		case imapclient.FetchItemDataBodySection:
			if it.Literal == nil {
				continue
			}
			raw, err = io.ReadAll(io.LimitReader(it.Literal, r.cfg.MaxBytes))
			if err != nil {
				cmd.Close()
				return nil, 0, false, fmt.Errorf("mailbox: read uid %d: %w", uid, err)
			}
		}
	}
	if err := cmd.Close(); err != nil {
		return nil, 0, false, fmt.Errorf("mailbox: fetch uid %d: %w", uid, err)
	}
	return raw, size, true, nil
}
