package mailer

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// benchHTML is a ~5 KB blog post: paragraphs, relative links and images,
// a list, a quote, code and an embedded video.
func benchHTML() string {
	var b strings.Builder
	b.WriteString(`<p>This week I finally rewrote the <a href="/tags/feeds">feed poller</a> and it is <em>much</em> politer. `)
	b.WriteString(`Here is what changed, with <a href="https://example.org/rfc9111">RFC 9111</a> in hand.</p>`)
	b.WriteString(`<figure><img src="images/chart.png" srcset="images/chart.png 1x, images/chart@2x.png 2x" alt="Requests per hour" width="1200" height="600"><figcaption>Requests per hour, before and after.</figcaption></figure>`)
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&b, `<p>Paragraph %d. Conditional requests carry the validators exactly as received; a 304 still updates caching headers. `+
			`See <a href="../notes/%d.html" onclick="track()">note %d</a> and the <a href="#fn%d">footnote</a>. `+
			`Politeness per host means at most two requests in flight, and a 429 backs off the whole host.</p>`, i, i, i, i)
	}
	b.WriteString(`<ul><li>Cache-Control max-age beats Expires</li><li>Jitter of up to 10 %</li><li>Penalty box for errors</li></ul>`)
	b.WriteString(`<blockquote><p>Be conservative in what you send.</p></blockquote>`)
	b.WriteString(`<pre><code>next := now.Add(interval + jitter)
if next.Before(floor) {
	next = floor
}</code></pre>`)
	b.WriteString(`<iframe src="https://www.youtube.com/embed/abc123" width="560" height="315"></iframe>`)
	b.WriteString(`<script>analytics()</script><p>Thanks for reading! <img src="/img/sig.png" alt="signature"></p>`)
	return b.String()
}

func benchItem(i int) ItemEmail {
	e := testItem()
	e.To = "reader" + strconv.Itoa(i) + "@example.org"
	e.MessageID = testSender().MessageID("item." + strconv.Itoa(i) + ".1")
	e.ItemHTML = benchHTML()
	return e
}

// BenchmarkCompose measures Sender.Item alone: sanitizing, text part,
// templates, headers.
func BenchmarkCompose(b *testing.B) {
	s := testSender()
	e := benchItem(1)
	b.SetBytes(int64(len(e.ItemHTML)))
	for b.Loop() {
		if _, err := s.Item(e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "emails/s")
}

// BenchmarkComposeReaders measures Sender.Item's work per email when a
// post goes to several readers in one outbox pass: the post's part made
// once (NewItemPost) and shared, each reader's part and MIME
// serialization per email.
func BenchmarkComposeReaders(b *testing.B) {
	s := testSender()
	for _, readers := range []int{1, 2, 10} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			es := make([]ItemEmail, readers)
			for i := range es {
				es[i] = benchItem(i)
			}
			for b.Loop() {
				p := NewItemPost(es[0])
				for _, e := range es {
					m, err := s.ItemFor(e, p)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := Render(m); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*readers), "ns/email")
		})
	}
}

// BenchmarkComposeRender adds MIME serialization (quoted-printable etc.).
func BenchmarkComposeRender(b *testing.B) {
	s := testSender()
	e := benchItem(1)
	var size int
	for b.Loop() {
		m, err := s.Item(e)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := Render(m)
		if err != nil {
			b.Fatal(err)
		}
		size = len(raw)
	}
	b.ReportMetric(float64(size), "bytes/email")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "emails/s")
}

// BenchmarkRenderAndSend composes item emails from a ~5 KB post and sends
// them through NewSMTP (pool of 4 connections) to the in-process server, in
// batches of 64 as the outbox worker would.
func BenchmarkRenderAndSend(b *testing.B) {
	srv, err := smtptest.Start(smtptest.Options{Discard: true})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cfg, err := ParseSMTPURL(srv.URL() + "&pool=4")
	if err != nil {
		b.Fatal(err)
	}
	tr := NewSMTP(cfg, WithHELO("bench.test"))
	defer tr.Close()
	s := testSender()
	ctx := context.Background()
	const batch = 64
	msgs := make([]*mail.Msg, 0, batch)
	b.ResetTimer()
	for i := 0; i < b.N; {
		msgs = msgs[:0]
		for ; len(msgs) < batch && i < b.N; i++ {
			m, err := s.Item(benchItem(i))
			if err != nil {
				b.Fatal(err)
			}
			msgs = append(msgs, m)
		}
		for _, err := range tr.Send(ctx, msgs) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if got := srv.Count(); got != b.N {
		b.Fatalf("server got %d of %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "emails/s")
	b.ReportMetric(float64(srv.Sessions()), "sessions")
}

// BenchmarkBareGoMail is the baseline: a bare go-mail client with default
// options on one connection sending one pre-built small message over and
// over to the same server.
func BenchmarkBareGoMail(b *testing.B) {
	srv, err := smtptest.Start(smtptest.Options{Discard: true})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(srv.Addr())
	port, _ := strconv.Atoi(portStr)
	c, err := mail.NewClient(host, mail.WithPort(port), mail.WithTLSPolicy(mail.NoTLS), mail.WithHELO("bench.test"), mail.WithTimeout(10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := c.DialWithContext(ctx); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	m := mail.NewMsg()
	if err := m.From("feedmail@mail.example.com"); err != nil {
		b.Fatal(err)
	}
	if err := m.To("reader@example.org"); err != nil {
		b.Fatal(err)
	}
	m.Subject("Hello")
	m.SetBodyString(mail.TypeTextPlain, "A short message.\n")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Send(m); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "emails/s")
}
