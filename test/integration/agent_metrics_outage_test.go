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

package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestAgentSecureMetricsWithTheAPIServerDown: the agent checks each
// scraper with the API server, so what does a scraper get when the agent
// cannot reach it? One the agent checked before keeps getting the page
// (the agent's kept answers), and the page still moves: the node's loop
// does not wait on the API server. A token never seen gets 500 saying the
// review failed, and gets the page once the API server is back.
func TestAgentSecureMetricsWithTheAPIServerDown(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	const ns, sa = "monitoring", "prometheus"
	c.CreateNamespace(t, ns, nil)
	// Two tokens of the same reader: one scrapes before the outage, one
	// only during it.
	known, unseen := c.CreateMetricsReader(t, ns, sa), c.MintToken(t, ns, sa)

	node := c.CreateNodes(t, "scraped", 1, testutil.NodeOptions{})[0].Name
	proxy, kubeconfig := c.ProxiedKubeconfig(t)
	a := startFixtureAgent(t, c, testutil.AgentOptions{NodeName: node, Kubeconfig: kubeconfig, SecureMetrics: true})
	url := a.MetricsURL + "/metrics"
	cycles := func(token string) float64 {
		t.Helper()
		code, body := testutil.Scrape(t, url, token)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", url, code, body)
		}
		v, ok := testutil.MetricValue(body, "waterline_agent_cycle_duration_seconds_count")
		if !ok {
			t.Fatalf("the agent's page has no cycle count")
		}
		return v
	}
	before := cycles(known)

	proxy.Blackhole()
	time.Sleep(3 * time.Second) // the agent runs cycles without the API server
	during := cycles(known)
	if during <= before {
		t.Errorf("with the API server unreachable the page says %v cycles, %v before: the loop or the page stopped", during, before)
	}
	code, body := testutil.Scrape(t, url, unseen)
	if code != http.StatusInternalServerError || !strings.Contains(body, "TokenReview failed") {
		t.Errorf("a token never seen, the API server unreachable: %d %q, want 500 naming the failed TokenReview", code, body)
	}

	proxy.Restore(t)
	testutil.Eventually(t, 30*time.Second, 500*time.Millisecond, func() (bool, error) {
		code, body := testutil.Scrape(t, url, unseen)
		return code == http.StatusOK, fmt.Errorf("%d %.100s", code, body)
	}, "the new token once the API server is back")
}
