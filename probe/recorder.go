package probe

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"
)

// recorder takes samples of one process tree and keeps peaks, the
// timeline, the log and the progress line up to date.
type recorder struct {
	opts  Options
	start time.Time

	mu       sync.Mutex
	peaks    map[int]*GPUPeak // by GPU index
	timeline []Sample
	// stride keeps every stride-th sample in the timeline once it has
	// been thinned; seen counts the samples taken.
	stride, seen int
	errs         []string
	progress     *progress
	log          *json.Encoder
}

func newRecorder(opts Options, start time.Time) *recorder {
	r := &recorder{opts: opts, start: start, peaks: make(map[int]*GPUPeak), stride: 1}
	if opts.ProgressTTY && opts.Progress != nil {
		r.progress = &progress{w: opts.Progress}
	}
	if opts.Log != nil {
		r.log = json.NewEncoder(opts.Log)
	}
	return r
}

// loop samples pid's tree now and then every interval until the returned
// stop function is called; stop waits for a sample in flight.
func (r *recorder) loop(pid int) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.opts.Interval)
		defer t.Stop()
		for {
			r.sample(pid)
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		if r.progress != nil {
			r.progress.done()
		}
	}
}

// sample takes one reading and records it.
func (r *recorder) sample(pid int) {
	snap, err := sampleOnce(context.Background(), r.opts.Sampler)
	if err != nil {
		r.addError(err.Error())
		return
	}
	pids := map[int]bool{pid: true}
	if !r.opts.AllProcesses {
		tree, err := ProcessTree(r.opts.Proc, pid)
		if err != nil {
			r.addError(err.Error() + " (counting the command's own PID only)")
		} else {
			pids = tree
		}
	}
	now := r.opts.Now()
	s := Sample{Time: now, ElapsedMS: now.Sub(r.start).Milliseconds(), GPUs: usage(snap, pids, r.opts.AllProcesses)}
	r.record(s)
}

func (r *recorder) record(s Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keep(s)
	for _, g := range s.GPUs {
		p := r.peaks[g.Index]
		if p == nil {
			p = &GPUPeak{Index: g.Index, UUID: g.UUID}
			r.peaks[g.Index] = p
		}
		if g.ProcessBytes > p.PeakBytes {
			p.PeakBytes, p.PeakAtMS = g.ProcessBytes, s.ElapsedMS
		}
		p.DevicePeakBytes = max(p.DevicePeakBytes, g.UsedBytes)
		p.TotalBytes = max(p.TotalBytes, g.TotalBytes)
	}
	if r.log != nil {
		if err := r.log.Encode(s); err != nil {
			r.addErrorLocked("write sample log: " + err.Error())
			r.log = nil
		}
	}
	if r.progress != nil {
		r.progress.update(s, r.sortedPeaks())
	}
}

// keep adds s to the timeline. A timeline that reaches MaxTimeline
// samples is thinned to every other one, and from then on only every
// stride-th sample is kept, so a days-long run stays bounded. Peaks and
// the log see every sample.
func (r *recorder) keep(s Sample) {
	r.seen++
	if (r.seen-1)%r.stride != 0 {
		return
	}
	if len(r.timeline) >= r.opts.MaxTimeline {
		kept := r.timeline[:0]
		for i := 0; i < len(r.timeline); i += 2 {
			kept = append(kept, r.timeline[i])
		}
		r.timeline = kept
		r.stride *= 2
		if (r.seen-1)%r.stride != 0 {
			return
		}
	}
	r.timeline = append(r.timeline, s)
}

func (r *recorder) addError(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addErrorLocked(msg)
}

func (r *recorder) addErrorLocked(msg string) {
	for _, e := range r.errs {
		if e == msg {
			return
		}
	}
	if len(r.errs) < maxSampleErrors {
		r.errs = append(r.errs, msg)
	}
}

func (r *recorder) sortedPeaks() []GPUPeak {
	out := make([]GPUPeak, 0, len(r.peaks))
	for _, p := range r.peaks {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// report returns what was recorded so far.
func (r *recorder) report() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Report{
		GPUs:         r.sortedPeaks(),
		Samples:      r.seen,
		SampleErrors: append([]string(nil), r.errs...),
		Timeline:     append([]Sample(nil), r.timeline...),
	}
}
