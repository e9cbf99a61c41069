// gen_fgprof.go — writes fgprof-wall.pb.gz of this corpus (SOURCES.md):
// fgprof (github.com/felixge/fgprof, Debian's
// golang-github-felixge-fgprof-dev) samples every goroutine's stack at
// 99 Hz, on CPU or waiting, and writes its own profile (sample type
// samples/count, time/nanoseconds) through google/pprof's profile package.
// The workload burns CPU in one goroutine while another sleeps and a third
// waits on a channel.  Run with Debian's Go and its Go packages:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go run gen_fgprof.go
package main

import (
	"os"
	"time"

	"github.com/felixge/fgprof"
)

var sink uint64

//go:noinline
func leafHash(n int) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < n; i++ {
		h = (h ^ uint64(i)) * 1099511628211
	}
	return h
}

//go:noinline
func spin(until time.Time) {
	for time.Now().Before(until) {
		sink += leafHash(20000)
	}
}

//go:noinline
func sleeper(until time.Time, done chan bool) {
	time.Sleep(time.Until(until))
	done <- true
}

//go:noinline
func waiter(ch chan int, done chan bool) {
	for range ch {
	}
	done <- true
}

func main() {
	f, err := os.Create("fgprof-wall.pb.gz")
	if err != nil {
		panic(err)
	}
	stop := fgprof.Start(f, fgprof.FormatPprof)
	until := time.Now().Add(700 * time.Millisecond)
	done := make(chan bool)
	ch := make(chan int)
	go sleeper(until, done)
	go waiter(ch, done)
	spin(until)
	<-done
	close(ch)
	<-done
	if err := stop(); err != nil {
		panic(err)
	}
	if err := f.Close(); err != nil {
		panic(err)
	}
}
