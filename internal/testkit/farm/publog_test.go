package farm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// checkWriter checks at each Write that the feed already serves the item
// logged, and keeps the lines.
type checkWriter struct {
	t     *testing.T
	f     *Feed
	lines bytes.Buffer
	calls int
}

func (w *checkWriter) Write(p []byte) (int, error) {
	w.calls++
	var pub Publication
	if err := json.Unmarshal(p, &pub); err != nil {
		w.t.Errorf("line %q: %v", p, err)
	}
	served := false
	for _, it := range w.f.Items() {
		served = served || it.ID == pub.GUID
	}
	if !served {
		w.t.Errorf("logged %s before the feed served it", pub.GUID)
	}
	return w.lines.Write(p)
}

func TestPublishLog(t *testing.T) {
	fm, clk := newFarm(t)
	f := fm.AddFeed(Spec{ItemCount: 3})
	w := &checkWriter{t: t, f: f}
	fm.SetPublishLog(w)
	fm.AddFeed(Spec{ItemCount: 2}) // initial items: not logged
	clk.Advance(1500*time.Millisecond + 7)
	at1 := clk.Now()
	f.Publish()
	clk.Advance(time.Second)
	at2 := clk.Now()
	f.Publish(Item{ID: "given-1", Title: "Given", Link: "http://example.com/1"}, Item{Title: "no id"})
	fm.SetPublishLog(nil)
	f.Publish()

	want := []Publication{
		{Feed: f.URL(), GUID: "farm:f1:i4", Link: f.URL() + "/i/4", Title: "Item 4 of feed 1", Published: at1, At: at1},
		{Feed: f.URL(), GUID: "given-1", Link: "http://example.com/1", Title: "Given", Published: at2, At: at2},
		{Feed: f.URL(), GUID: "farm:f1:i5", Title: "no id", Published: at2, At: at2},
	}
	var got []Publication
	sc := bufio.NewScanner(&w.lines)
	for sc.Scan() {
		var p Publication
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, p)
	}
	if w.calls != len(want) || len(got) != len(want) {
		t.Fatalf("%d writes, %d lines, want %d:\n%s", w.calls, len(got), len(want), w.lines.String())
	}
	for i := range want {
		if !got[i].Published.Equal(want[i].Published) || !got[i].At.Equal(want[i].At) {
			t.Errorf("line %d times %v %v, want %v", i, got[i].Published, got[i].At, want[i].Published)
		}
		got[i].Published, got[i].At = want[i].Published, want[i].At
		if got[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if fm.PublishLogErr() != nil {
		t.Errorf("PublishLogErr = %v", fm.PublishLogErr())
	}
}

type failWriter struct{ calls int }

func (w *failWriter) Write([]byte) (int, error) {
	w.calls++
	return 0, errors.New("disk full")
}

// TestPublishLogError: the first write error is kept and stops the log;
// publishing goes on.
func TestPublishLogError(t *testing.T) {
	fm, _ := newFarm(t)
	f := fm.AddFeed(Spec{ItemCount: 1})
	w := &failWriter{}
	fm.SetPublishLog(w)
	f.Publish()
	f.Publish()
	if err := fm.PublishLogErr(); err == nil || w.calls != 1 {
		t.Errorf("PublishLogErr = %v after %d writes, want the error after 1", err, w.calls)
	}
	if n := len(f.Items()); n != 3 {
		t.Errorf("%d items, want 3", n)
	}
}
