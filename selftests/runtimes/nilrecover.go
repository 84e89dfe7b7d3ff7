// Nil dereferences recovered as runtime errors (Go's SIGSEGV handler), in
// several goroutines, with cgo (the runtime's handlers chain with C's);
// os/signal delivers SIGUSR1 sent to the process.
package main

/*
static int add(int a, int b) { return a + b; }
*/
import "C"

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

type node struct{ v int }

//go:noinline
func load(n *node) int { return n.v }

func churn(calls, every int) (caught int) {
	real := &node{v: 1}
	for i := 0; i < calls; i++ {
		func() {
			defer func() {
				if r := recover(); r != nil {
					caught++
				}
			}()
			n := real
			if i%every == 0 {
				n = nil
			}
			load(n)
		}()
	}
	return caught
}

// RT_MAPS: a copy of /proc/self/maps; RT_TASKS: the threads' names (run.sh's mapped).
func leaveTraces() {
	if maps := os.Getenv("RT_MAPS"); maps != "" {
		if b, err := os.ReadFile("/proc/self/maps"); err == nil {
			os.WriteFile(maps, b, 0o644)
		}
	}
	if tasks := os.Getenv("RT_TASKS"); tasks != "" {
		var names []byte
		if ents, err := os.ReadDir("/proc/self/task"); err == nil {
			for _, e := range ents {
				if b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/comm"); err == nil {
					names = append(names, b...)
				}
			}
		}
		os.WriteFile(tasks, names, 0o644)
	}
}

func main() {
	leaveTraces()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	var wg sync.WaitGroup
	results := make([]int, 4)
	for g := range results {
		wg.Add(1)
		go func(g int) { defer wg.Done(); results[g] = churn(200000, 50) }(g)
	}
	wg.Wait()
	for g, r := range results {
		fmt.Printf("goroutine %d: %d nil dereferences recovered\n", g, r)
	}
	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	fmt.Printf("os/signal: %v\n", <-ch)
	fmt.Printf("cgo: %d\n", C.add(40, 2))
	fmt.Println("done")
}
