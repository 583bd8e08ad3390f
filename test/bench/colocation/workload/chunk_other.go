//go:build !linux

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

// allocChunk allocates n bytes (a multiple of 8) on the Go heap, every
// page touched.
func allocChunk(n int) []uint64 { return touch(make([]uint64, n/8)) }

// freeChunk leaves the chunk to the collector.
func freeChunk([]uint64) {}
