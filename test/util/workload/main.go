/*
Copyright The Waterline Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command workload is a process for tests to put in a cgroup: it burns
// CPU and/or holds memory, exactly as asked, so a test knows what the
// agent should measure. It waits for a line on stdin before starting (so
// the test can move it into its cgroup first) and prints "ready" once its
// load is on.
//
//	workload -burn 1 -alloc 104857600
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

func main() {
	burn := flag.Int("burn", 0, "goroutines spinning, each on one core")
	alloc := flag.Int("alloc", 0, "bytes to map and touch")
	flag.Parse()
	runtime.GOMAXPROCS(max(*burn, 1))
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		os.Exit(2)
	}
	if *alloc > 0 {
		// mmap, not the Go heap: exactly this many bytes, no GC to guess.
		mem, err := syscall.Mmap(-1, 0, *alloc, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for i := 0; i < len(mem); i += os.Getpagesize() {
			mem[i] = 1
		}
	}
	for range *burn {
		go func() {
			x := uint64(1)
			for {
				x = x*6364136223846793005 + 1442695040888963407
				if x == 0 {
					fmt.Println(x)
				}
			}
		}()
	}
	fmt.Println("ready")
	select {}
}
