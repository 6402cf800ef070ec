package farm

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Publication is one item the farm published after its feed was added
// (Feed.Publish), as one line of the publication log: what an oracle needs
// to expect a delivery and measure its lag.
type Publication struct {
	Feed      string    `json:"feed"` // the feed's URL
	GUID      string    `json:"guid"`
	Link      string    `json:"link"`
	Title     string    `json:"title"`
	Published time.Time `json:"published"` // farm clock when the feed started serving it
	At        time.Time `json:"at"`        // farm clock when the line was written
}

// publog writes Publications as JSON lines to one writer.
type publog struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// SetPublishLog makes every later Publish append one JSON line per new
// item to w, each with a single Write (so an *os.File has it at once);
// nil stops the log. Items added with the feed are not logged.
func (fm *Farm) SetPublishLog(w io.Writer) {
	fm.pub.mu.Lock()
	fm.pub.w, fm.pub.err = w, nil
	fm.pub.mu.Unlock()
}

// PublishLogErr returns the first error writing the publication log since
// SetPublishLog, nil if none.
func (fm *Farm) PublishLogErr() error {
	fm.pub.mu.Lock()
	defer fm.pub.mu.Unlock()
	return fm.pub.err
}

// logPublished writes the lines for the n newest items of st, published
// at when in feed f. After an error it writes nothing more.
func (fm *Farm) logPublished(f *Feed, st *state, n int, when time.Time) {
	fm.pub.mu.Lock()
	defer fm.pub.mu.Unlock()
	if fm.pub.w == nil || fm.pub.err != nil {
		return
	}
	url := f.URL()
	for _, it := range f.itemsN(st, n) {
		b, err := json.Marshal(Publication{Feed: url, GUID: it.ID, Link: it.Link, Title: it.Title,
			Published: when, At: fm.clk.Now()})
		if err == nil {
			_, err = fm.pub.w.Write(append(b, '\n'))
		}
		if err != nil {
			fm.pub.err = err
			return
		}
	}
}
