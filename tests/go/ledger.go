// A Go service for brunt's tests (127.0.0.1 only): one sync.Mutex held
// ~ms per request on /post (capacity ≈ 1000/ms requests per second), a
// channel bottleneck on /queue (2 workers behind a channel of 4), idle
// workers parked on a channel nobody sends to, and net/http/pprof on its
// own listener with mutex and block profiling on.
//
//	go build -o ledger ledger.go && ./ledger -addr 127.0.0.1:0 -pprof 127.0.0.1:0
//
// Prints `service=HOST:PORT pprof=HOST:PORT` once both listen.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

type ledger struct {
	mu      sync.Mutex
	entries int
}

// post holds the ledger's lock for the whole write: the hot spot.
func (l *ledger) post(hold time.Duration) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	time.Sleep(hold)
	l.entries++
	return l.entries
}

type job struct {
	hold time.Duration
	done chan struct{}
}

func worker(jobs <-chan job) {
	for j := range jobs {
		time.Sleep(j.hold)
		close(j.done)
	}
}

// idleWorker waits for work that never comes: idle, never contention.
func idleWorker(never <-chan int) {
	for range never {
	}
}

func ms(r *http.Request, def int) time.Duration {
	if v, err := strconv.Atoi(r.URL.Query().Get("ms")); err == nil && v >= 0 {
		return time.Duration(v) * time.Millisecond
	}
	return time.Duration(def) * time.Millisecond
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "service address")
	pprofAddr := flag.String("pprof", "127.0.0.1:0", "pprof address")
	flag.Parse()
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(10000) // blocking events of 10 µs and longer

	l := &ledger{}
	jobs := make(chan job, 4)
	for i := 0; i < 2; i++ {
		go worker(jobs)
	}
	never := make(chan int)
	for i := 0; i < 8; i++ {
		go idleWorker(never)
	}
	svc := http.NewServeMux()
	svc.HandleFunc("/post", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "entry %d\n", l.post(ms(r, 5)))
	})
	svc.HandleFunc("/queue", func(w http.ResponseWriter, r *http.Request) {
		j := job{hold: ms(r, 5), done: make(chan struct{})}
		jobs <- j
		<-j.done
		fmt.Fprintln(w, "done")
	})
	svc.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	sl, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pl, err := net.Listen("tcp", *pprofAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go http.Serve(pl, http.DefaultServeMux) // net/http/pprof registers there
	fmt.Printf("service=%s pprof=%s\n", sl.Addr(), pl.Addr())
	os.Stdout.Sync()
	if err := http.Serve(sl, svc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
