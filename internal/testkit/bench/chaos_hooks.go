package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"time"
)

// plainHooks is a webhook receiver without faults: it answers 204 and
// records each hook.
type plainHooks struct{ srv *httptest.Server }

func (p *plainHooks) URL() string  { return p.srv.URL }
func (p *plainHooks) Close() error { p.srv.Close(); return nil }

// startHookBackends starts the faulty and the clean webhook receivers.
func startHookBackends(_ int64, rec *recorder) (hookBackend, hookBackend, error) {
	mk := func() *plainHooks {
		return &plainHooks{srv: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			rec.hook(r.Header.Get("webhook-id"), r.URL.Path, body, time.Now())
			w.WriteHeader(http.StatusNoContent)
		}))}
	}
	return mk(), mk(), nil
}
