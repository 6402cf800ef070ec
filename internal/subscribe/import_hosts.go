package subscribe

import "context"

// hostQueue is the jobs of one host not started yet, and how many of its
// jobs run now.
type hostQueue struct {
	waiting []int // indices into the jobs
	running int
	ready   bool // in the ready list
}

// perHost runs do on every job, each in its own goroutine: at most limit at
// once in all and at most most per host (host(job)), the hosts with jobs
// waiting served in turn, so that a host with many feeds neither holds up
// the others nor gets more than its share. It returns when every job
// started has returned, with the jobs it did not start because ctx ended.
func perHost[J any](ctx context.Context, jobs []J, host func(J) string, limit, most int, do func(J)) []J {
	limit, most = max(limit, 1), max(most, 1)
	queues := map[string]*hostQueue{}
	var ready []*hostQueue
	for i, j := range jobs {
		h := host(j)
		q := queues[h]
		if q == nil {
			q = &hostQueue{ready: true}
			queues[h] = q
			ready = append(ready, q)
		}
		q.waiting = append(q.waiting, i)
	}
	done := make(chan *hostQueue, limit)
	running := 0
	for {
		for running < limit && len(ready) > 0 && ctx.Err() == nil {
			q := ready[0]
			ready[0] = nil
			ready = ready[1:]
			i := q.waiting[0]
			q.waiting = q.waiting[1:]
			q.running++
			running++
			if q.ready = len(q.waiting) > 0 && q.running < most; q.ready {
				ready = append(ready, q)
			}
			go func() {
				defer func() { done <- q }()
				do(jobs[i])
			}()
		}
		if running == 0 {
			break
		}
		var q *hostQueue
		select {
		case q = <-done:
		case <-ctx.Done():
			q = <-done // start nothing more; wait for what runs
		}
		running--
		q.running--
		if !q.ready && len(q.waiting) > 0 && q.running < most {
			q.ready = true
			ready = append(ready, q)
		}
	}
	var left []J
	for _, q := range queues {
		for _, i := range q.waiting {
			left = append(left, jobs[i])
		}
	}
	return left
}
