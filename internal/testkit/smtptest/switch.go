package smtptest

import (
	"context"
	"sync"

	"github.com/wneessen/go-mail"
)

// Sender is what a mail transport does: send a batch, one error per message.
type Sender interface {
	Send(ctx context.Context, msgs []*mail.Msg) []error
}

// Switch is a transport that forwards to another one a test can swap while
// workers use it (a server that stops failing). Close does nothing: the
// transports behind it are the test's to close.
type Switch struct {
	mu  sync.Mutex
	cur Sender
}

// Set makes s forward to t from now on.
func (s *Switch) Set(t Sender) {
	s.mu.Lock()
	s.cur = t
	s.mu.Unlock()
}

// Send forwards msgs to the transport set last.
func (s *Switch) Send(ctx context.Context, msgs []*mail.Msg) []error {
	s.mu.Lock()
	t := s.cur
	s.mu.Unlock()
	return t.Send(ctx, msgs)
}

// SendEach forwards msgs to the transport set last, reporting each result
// as it comes when that transport can (mailer.EachSender), else in order
// once its Send returns.
func (s *Switch) SendEach(ctx context.Context, msgs []*mail.Msg, report func(i int, err error)) {
	s.mu.Lock()
	t := s.cur
	s.mu.Unlock()
	if e, ok := t.(interface {
		SendEach(context.Context, []*mail.Msg, func(int, error))
	}); ok {
		e.SendEach(ctx, msgs, report)
		return
	}
	for i, err := range t.Send(ctx, msgs) {
		report(i, err)
	}
}

// Close does nothing.
func (s *Switch) Close() error { return nil }
