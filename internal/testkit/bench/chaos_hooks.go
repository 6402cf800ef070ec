package bench

import (
	"time"

	"github.com/feedmail/feedmail/internal/testkit/hooksink"
)

// startHookBackends starts the webhook receivers behind the switch: one
// answering 500 to 2 % and hanging on 2 % (until feedmail gives up), one
// without faults; both record every hook they answer 2xx or take from a
// sender gone before the answer.
func startHookBackends(seed int64, rec *recorder) (faulty, clean *hooksink.Server, err error) {
	observe := func(h hooksink.Hook) { rec.hook(h.ID, h.Path, h.Body, h.At, h.ReplyLost) }
	faulty, err = hooksink.Start(hooksink.Options{Seed: seed, Fail500: 0.02, Timeout: 0.02, TimeoutBy: 2 * time.Minute, Observe: observe})
	if err != nil {
		return nil, nil, err
	}
	clean, err = hooksink.Start(hooksink.Options{Observe: observe})
	if err != nil {
		_ = faulty.Close()
		return nil, nil, err
	}
	return faulty, clean, nil
}
