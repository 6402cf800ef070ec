package outbox

import (
	"sync"
	"time"

	"github.com/feedmail/feedmail/mailer"
)

// postKey names a post as one render pass shows it: the item in one
// subscription format. Within a pass the item's feed and its article are
// the same for every row, so the key decides all of NewItemPost's input.
type postKey struct {
	item   int64
	format string
}

// renderMemo is what the rows of one render pass share: each post's
// reader-independent part (a post fanned out to many readers is
// sanitized and converted once, not once per reader) and each time zone
// loaded. It lives for one pass only and is safe for concurrent use.
type renderMemo struct {
	mu    sync.Mutex
	posts map[postKey]*memoPost
	zones map[string]*time.Location
}

// memoPost is one post, made once by the first render that wants it;
// the others wait on once and share p.
type memoPost struct {
	once sync.Once
	p    *mailer.ItemPost
}

// post returns the post of k, made by mk for the first render that asks
// and shared by every later one.
func (m *renderMemo) post(k postKey, mk func() *mailer.ItemPost) *mailer.ItemPost {
	m.mu.Lock()
	if m.posts == nil {
		m.posts = map[postKey]*memoPost{}
	}
	e := m.posts[k]
	if e == nil {
		e = &memoPost{}
		m.posts[k] = e
	}
	m.mu.Unlock()
	e.once.Do(func() { e.p = mk() })
	return e.p
}

// location returns the time zone named name, loaded once per pass; nil
// when it is empty or unknown.
func (m *renderMemo) location(name string) *time.Location {
	if name == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if loc, ok := m.zones[name]; ok {
		return loc
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		loc = nil
	}
	if m.zones == nil {
		m.zones = map[string]*time.Location{}
	}
	m.zones[name] = loc
	return loc
}
