package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/feedmail/feedmail/internal/filter"
)

// How a subscription's emails show a post (Subscription.Format).
const (
	FormatFull    = "full"    // the post as the feed gives it
	FormatSummary = "summary" // its first words as text, no images
	FormatTitle   = "title"   // its title, link and enclosures only
	FormatArticle = "article" // the article fetched from its link (item_articles.go)
)

// Formats lists the formats in the order forms offer them.
var Formats = []string{FormatFull, FormatSummary, FormatTitle, FormatArticle}

// ErrBadControls marks a filter or format a person cannot set; the
// message says what is wrong in one line.
var ErrBadControls = errors.New("bad subscription settings")

// Controls are the reader's settings of a subscription; a nil field is
// left as it is, "" clears a filter.
type Controls struct {
	Include, Exclude, Format *string
}

// CheckControls validates c and returns it with the terms in canonical
// form and the format trimmed and lower-cased. The error wraps
// ErrBadControls and names the field.
func CheckControls(c Controls) (Controls, error) {
	var out Controls
	for _, f := range []struct {
		name    string
		in, out **string
	}{{"include", &c.Include, &out.Include}, {"exclude", &c.Exclude, &out.Exclude}} {
		if *f.in == nil {
			continue
		}
		t, err := filter.Parse(**f.in)
		if err != nil {
			return Controls{}, fmt.Errorf("%w: %s: %s", ErrBadControls, f.name, err)
		}
		s := t.String()
		*f.out = &s
	}
	if c.Format != nil {
		v := strings.ToLower(strings.TrimSpace(*c.Format))
		if !validFormat(v) {
			return Controls{}, fmt.Errorf("%w: unknown format %q (full, summary, title or article)", ErrBadControls, *c.Format)
		}
		out.Format = &v
	}
	return out, nil
}

// validFormat reports whether v is one of Formats.
func validFormat(v string) bool {
	for _, f := range Formats {
		if v == f {
			return true
		}
	}
	return false
}

// SetSubscriptionControls changes the given settings of userID's
// subscription subID (CheckControls first: nothing changes when one is
// bad) and returns the subscription. Posts already routed keep going;
// the filters decide for posts found from now on, the format for every
// email rendered from now on. Another person's subscription gives
// ErrNotFound.
func (s *Store) SetSubscriptionControls(ctx context.Context, userID, subID int64, c Controls) (*Subscription, error) {
	c, err := CheckControls(c)
	if err != nil {
		return nil, err
	}
	upd := map[string]any{}
	if c.Include != nil {
		upd["include_terms"] = *c.Include
	}
	if c.Exclude != nil {
		upd["exclude_terms"] = *c.Exclude
	}
	if c.Format != nil {
		upd["format"] = *c.Format
	}
	sub, err := s.AccountSubscription(ctx, userID, subID)
	if err != nil {
		return nil, err
	}
	if len(upd) == 0 {
		return sub, nil
	}
	if err := s.DB.WithContext(ctx).Model(&Subscription{}).Where("id = ? AND user_id = ?", subID, userID).
		Updates(upd).Error; err != nil {
		return nil, fmt.Errorf("set settings of subscription %d: %w", subID, err)
	}
	if c.Include != nil || c.Exclude != nil {
		// Filters change what the reader is forecast to spend.
		if err := s.lowLineStale(ctx, userID); err != nil {
			return nil, err
		}
	}
	return s.AccountSubscription(ctx, userID, subID)
}

// filterOf compiles a subscription's stored terms; ok is false when they
// no longer parse (stored before a rule changed), and the caller then
// lets no post through: the person asked for less, not more.
func filterOf(include, exclude string) (filter.Filter, bool) {
	f, err := filter.New(include, exclude)
	return f, err == nil
}
