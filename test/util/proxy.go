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

package util

import (
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// Proxy forwards TCP connections on a loopback port to a target address
// until it is cut: a network partition between a component and the API
// server that a test can open and close (restarting envtest's API server
// would give it a new CA, which the component's kubeconfig would not
// trust). TLS passes through untouched.
type Proxy struct {
	// Addr is the proxy's host:port.
	Addr   string
	target string

	mu sync.Mutex
	// hold makes new connections hang: accepted, never answered.
	hold  bool
	l     net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartProxy starts forwarding a free loopback port to target; the test's
// cleanup stops it.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: l.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	p.serve(l)
	t.Cleanup(p.Cut)
	return p
}

func (p *Proxy) serve(l net.Listener) {
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *Proxy) forward(c net.Conn) {
	p.mu.Lock()
	hold := p.hold
	if hold {
		p.conns[c] = struct{}{}
	}
	p.mu.Unlock()
	if hold {
		// Read and drop until the connection is closed: a peer that
		// never answers, as across a partition that drops packets.
		_, _ = io.Copy(io.Discard, c)
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.l == nil {
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	_ = c.Close()
	_ = up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// Cut closes the listener and every connection: the target is unreachable
// (connection refused) until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	l := p.l
	p.l = nil
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
	p.mu.Unlock()
	if l != nil {
		_ = l.Close()
	}
	p.wg.Wait()
}

// Blackhole severs every connection and makes new ones hang: accepted,
// never answered (a partition that drops packets rather than refusing).
// Restore ends it.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	p.hold = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
	p.mu.Unlock()
}

// Restore listens on the same port again.
func (p *Proxy) Restore(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	wasHolding, listening := p.hold, p.l != nil
	p.hold = false
	if wasHolding {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
	p.mu.Unlock()
	if listening {
		return
	}
	l, err := net.Listen("tcp", p.Addr)
	if err != nil {
		t.Fatalf("Restoring the proxy on %s: %v", p.Addr, err)
	}
	p.serve(l)
}

// ProxiedKubeconfig starts a Proxy to the cluster's API server and writes a
// kubeconfig that reaches it through the proxy.
func (c *Cluster) ProxiedKubeconfig(t testing.TB) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(c.Config.Host)
	if err != nil || u.Host == "" {
		t.Fatalf("Parsing the API server address %q: %v", c.Config.Host, err)
	}
	p := StartProxy(t, u.Host)
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range cfg.Clusters {
		su, err := url.Parse(cl.Server)
		if err != nil {
			t.Fatal(err)
		}
		su.Host = p.Addr
		cl.Server = su.String()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-proxied")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return p, path
}
