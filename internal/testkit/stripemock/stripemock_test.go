package stripemock

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestMockRefusesWhatStripeWould checks that the mock answers a valid
// Checkout Session and refuses one with a parameter Stripe does not have,
// and that the proxy records both: what the checkout test relies on.
func TestMockRefusesWhatStripeWould(t *testing.T) {
	s := Start(t)
	post := func(form url.Values) int {
		req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/checkout/sessions", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("sk_test_stripemock", "")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	good := url.Values{"mode": {"payment"}, "success_url": {"https://example.com/ok"},
		"line_items[0][price_data][currency]": {"usd"}, "line_items[0][price_data][unit_amount]": {"500"},
		"line_items[0][price_data][product_data][name]": {"credits"}, "line_items[0][quantity]": {"1"}}
	if code := post(good); code != http.StatusOK {
		t.Fatalf("valid session: %d", code)
	}
	bad := url.Values{"mode": {"payment"}, "no_such_parameter": {"1"}}
	if code := post(bad); code != http.StatusBadRequest {
		t.Fatalf("session with an unknown parameter: %d, want 400", code)
	}
	ex := s.Exchanges()
	if len(ex) != 2 || ex[0].Form.Get("mode") != "payment" || ex[1].Form.Get("no_such_parameter") != "1" {
		t.Fatalf("exchanges recorded: %+v", ex)
	}
	if r := s.Refused(); len(r) != 1 || r[0].Status != http.StatusBadRequest {
		t.Fatalf("refused: %+v", r)
	}
}
