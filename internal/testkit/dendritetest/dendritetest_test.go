package dendritetest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestStartSendRead starts Dendrite, sends two messages into the room the
// way a client does (the second twice, with one transaction id) and reads
// them back: the homeserver keeps one event per transaction id.
func TestStartSendRead(t *testing.T) {
	s := Start(t)
	ctx := context.Background()
	send := func(txn, body string) {
		t.Helper()
		u := s.URL + "/_matrix/client/v3/rooms/" + url.PathEscape(s.Room) + "/send/m.room.message/" + txn
		req, _ := http.NewRequestWithContext(ctx, "PUT", u, strings.NewReader(fmt.Sprintf(`{"msgtype":"m.text","body":%q}`, body)))
		req.Header.Set("Authorization", "Bearer "+s.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("send %s: %v %v", txn, err, resp)
		}
		resp.Body.Close()
	}
	send("t1", "first")
	send("t2", "second")
	send("t2", "second")
	msgs, err := s.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range msgs {
		bodies = append(bodies, m.Content.Body)
	}
	if got := strings.Join(bodies, ","); got != "first,second" {
		t.Fatalf("room holds %q, want first,second", got)
	}
}
