// gen_go_profiles.go — writes the Go-runtime pprof files of this corpus
// (see SOURCES.md): a CPU profile (runtime/pprof.StartCPUProfile) of a
// small deterministic workload, and a heap profile
// (runtime/pprof.WriteHeapProfile), and a block profile
// (pprof.Lookup("block"), goroutines waiting on channels).  Run once with
// Debian's golang-go:
//
//	go run gen_go_profiles.go   # writes go-cpu.pb.gz, go-heap.pb.gz, go-block.pb.gz
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

var sink []byte

//go:noinline
func leafHash(n int) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < n; i++ {
		h = (h ^ uint64(i)) * 1099511628211
	}
	return h
}

//go:noinline
func middle(n int) uint64 {
	var s uint64
	for i := 0; i < 40; i++ {
		s += leafHash(n)
	}
	return s
}

//go:noinline
func allocate(n int) {
	for i := 0; i < n; i++ {
		sink = make([]byte, 64<<10)
	}
}

//go:noinline
func work() uint64 {
	var s uint64
	for i := 0; i < 600; i++ {
		s += middle(20000)
		s += leafHash(100000)
		allocate(2)
	}
	return s
}

//go:noinline
func consumer(ch chan int, done chan bool) {
	for range ch {
	}
	done <- true
}

//go:noinline
func producer(ch chan int) {
	for i := 0; i < 20; i++ {
		time.Sleep(time.Millisecond)
		ch <- i
	}
	close(ch)
}

func main() {
	runtime.MemProfileRate = 4096
	runtime.SetBlockProfileRate(1)
	f, err := os.Create("go-cpu.pb.gz")
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	work()
	pprof.StopCPUProfile()
	f.Close()
	h, err := os.Create("go-heap.pb.gz")
	if err != nil {
		panic(err)
	}
	if err := pprof.WriteHeapProfile(h); err != nil {
		panic(err)
	}
	h.Close()
	ch, done := make(chan int), make(chan bool)
	go consumer(ch, done)
	producer(ch)
	<-done
	b, err := os.Create("go-block.pb.gz")
	if err != nil {
		panic(err)
	}
	if err := pprof.Lookup("block").WriteTo(b, 0); err != nil {
		panic(err)
	}
	b.Close()
}
