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

package controlplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/waterline-dev/waterline/test/bench/benchutil"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// The fleet reads processes, pages and statistics through
// test/bench/benchutil, the helpers every harness under test/bench shares;
// what is its own is where it scrapes.

// scrape reads a Prometheus page over plain HTTP (the manager's metrics
// endpoint on loopback).
func scrape(ctx context.Context, url string) ([]benchutil.Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	return benchutil.ParseMetrics(string(b)), nil
}

// scrapeAPIServer reads kube-apiserver's /metrics as the cluster admin.
func scrapeAPIServer(ctx context.Context, c *testutil.Cluster) ([]benchutil.Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping kube-apiserver's /metrics: %w", err)
	}
	return benchutil.ParseMetrics(string(b)), nil
}
