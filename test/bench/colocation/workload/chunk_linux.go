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

package workload

import (
	"syscall"
	"unsafe"
)

// allocChunk maps n bytes (a multiple of 8) of anonymous memory with
// every page backed now (MAP_POPULATE: one call instead of a fault per
// page), or, if the mapping fails, allocates and touches them on the Go
// heap.
func allocChunk(n int) []uint64 {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_POPULATE)
	if err != nil {
		return touch(make([]uint64, n/8))
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n/8)
}

// freeChunk unmaps a chunk of allocChunk (the Go heap's are left to the
// collector).
func freeChunk(c []uint64) {
	if len(c) == 0 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&c[0])), len(c)*8)
	_ = syscall.Munmap(b) // EINVAL for the heap's fallback, not a mapping
}
