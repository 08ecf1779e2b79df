// Command load sends a bounded load of API requests to a gpumem server on
// this machine's loopback and prints, for each concurrency, the answers
// per second, the latency percentiles and the server's CPU time per
// request. bench/run.sh starts the server and runs it.
//
//	go run ./bench/load -addr 127.0.0.1:8080 -pid 1234 -route estimate -c 1,8,64 -n 20000
//
// Each connection is a minimal HTTP/1.1 keep-alive client, as load
// generators such as wrk are: net/http's client hands each request between
// goroutines, which on a small machine costs as much as the server's work.
// Every answer must be a 200 for its own job (the echo of the job's
// varying length is checked), so a fast error is not counted as an answer.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// estimateQueries are the jobs of the estimate load; each request gives
// one of them a sequence length of its own, so each is a fresh estimate.
var estimateQueries = []string{
	"model=llama3-8b",
	"model=llama3-8b&method=lora&attn=flash&grad_checkpoint=full",
	"model=qwen2.5-7b&mode=inference&batch=8&gen_len=1024",
	"model=llama3.1-8b&mode=serving&gpu=H100-SXM",
	"model=mixtral-8x7b&method=qlora",
}

// request returns the target of the n-th request of a route and the bytes
// its answer must contain.
func request(route string, n int, cached bool) (string, string) {
	switch route {
	case "plan":
		// The default search space: every catalog GPU, the fit and the
		// largest batch, sequence and fewest GPUs on each. A sequence
		// length of its own makes each request a new plan unless cached
		// is set, when all ask for the same one.
		seq := 4096
		if !cached {
			seq = 1024 + n%3072
		}
		return fmt.Sprintf("/api/plan?model=llama3-8b&method=lora&seq_len=%d", seq), fmt.Sprintf(`"seq_len":%d`, seq)
	default:
		q := estimateQueries[n%len(estimateQueries)]
		key := "seq_len"
		switch {
		case strings.Contains(q, "mode=inference"):
			key = "prompt_len"
		case strings.Contains(q, "mode=serving"):
			key = "max_model_len"
		}
		seq := 256 + n%3840
		return fmt.Sprintf("/api/estimate?%s&%s=%d", q, key, seq), fmt.Sprintf(`"%s":%d`, key, seq)
	}
}

type conn struct {
	host string
	c    net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	body []byte
}

func dial(addr string) (*conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{host: addr, c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriter(c)}, nil
}

// get sends GET target and returns the status and body (valid until the
// next call). Answers are framed by Content-Length, which the API sends.
func (c *conn) get(target string) (int, []byte, error) {
	if err := c.c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return 0, nil, err
	}
	fmt.Fprintf(c.w, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n\r\n", target, c.host)
	if err := c.w.Flush(); err != nil {
		return 0, nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	_, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(rest) < 3 {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(rest[:3]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		if len(line) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return 0, nil, fmt.Errorf("bad Content-Length %q", v)
			}
		}
	}
	if length < 0 {
		return 0, nil, errors.New("answer without Content-Length")
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	c.body = c.body[:length]
	_, err = io.ReadFull(c.r, c.body)
	return status, c.body, err
}

// cpuTicks returns the user and system CPU time of process pid, in clock
// ticks (1/100 s on Linux), from /proc.
func cpuTicks(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 14th and 15th fields of the line.
	_, rest, ok := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return u + s, nil
}

// round sends up to total requests (stopping after limit) over conns
// connections and returns the latencies of the answers.
func round(addr, route string, conns, total, offset int, limit time.Duration, cached bool) ([]time.Duration, time.Duration, error) {
	cs := make([]*conn, conns)
	for i := range cs {
		c, err := dial(addr)
		if err != nil {
			return nil, 0, err
		}
		defer c.c.Close()
		cs[i] = c
	}
	lat := make([]time.Duration, total)
	var next, done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(limit)
	for _, c := range cs {
		wg.Go(func() {
			for {
				n := int(next.Add(1) - 1)
				if n >= total || time.Now().After(deadline) {
					return
				}
				target, echo := request(route, offset+n, cached)
				t0 := time.Now()
				status, body, err := c.get(target)
				lat[n] = time.Since(t0)
				if err == nil && (status != 200 || !echoes(body, echo)) {
					err = fmt.Errorf("GET %s: status %d, body %.200s", target, status, body)
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	got := slices.DeleteFunc(lat[:min(int(next.Load()), total)], func(d time.Duration) bool { return d == 0 })
	return got, elapsed, firstErr
}

// echoes reports whether body holds the member echo ("key":value),
// compact or with the space the indented form has after the colon.
func echoes(body []byte, echo string) bool {
	if bytes.Contains(body, []byte(echo)) {
		return true
	}
	k, v, _ := strings.Cut(echo, ":")
	return bytes.Contains(body, []byte(k+": "+v))
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "server address (loopback)")
	pid := flag.Int("pid", 0, "server process id, to read its CPU time (0: not reported)")
	route := flag.String("route", "estimate", "estimate or plan")
	levels := flag.String("c", "1,8,64", "concurrencies (connections), comma-separated")
	total := flag.Int("n", 20000, "requests per concurrency, at most")
	limit := flag.Duration("limit", 20*time.Second, "time per concurrency, at most")
	cached := flag.Bool("cached", false, "plan: every request asks for the same plan (served from the server's cache)")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "load: -addr %s: want a loopback address (127.0.0.1:PORT)\n", *addr)
		os.Exit(2)
	}
	fmt.Printf("%-10s %5s %9s %12s %9s %9s %9s %14s\n", "route", "conns", "answers", "answers/s", "p50", "p99", "max", "server CPU/req")
	offset := 0
	for _, l := range strings.Split(*levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(l))
		if err != nil || c < 1 {
			fmt.Fprintf(os.Stderr, "load: -c: bad concurrency %q\n", l)
			os.Exit(2)
		}
		var t0 int64
		if *pid > 0 {
			t0, _ = cpuTicks(*pid)
		}
		lat, elapsed, err := round(*addr, *route, c, *total, offset, *limit, *cached)
		offset += *total
		if err != nil {
			fmt.Fprintf(os.Stderr, "load: %v\n", err)
			os.Exit(1)
		}
		cpu := "-"
		if *pid > 0 {
			if t1, err := cpuTicks(*pid); err == nil && len(lat) > 0 {
				cpu = fmt.Sprintf("%.0f µs", float64(t1-t0)*1e4/float64(len(lat)))
			}
		}
		slices.Sort(lat)
		name := *route
		if *cached {
			name += " (cached)"
		}
		fmt.Printf("%-10s %5d %9d %12.0f %9s %9s %9s %14s\n", name, c, len(lat), float64(len(lat))/elapsed.Seconds(),
			percentile(lat, 0.50).Round(10*time.Microsecond), percentile(lat, 0.99).Round(10*time.Microsecond),
			lat[len(lat)-1].Round(10*time.Microsecond), cpu)
	}
}
