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

// Command colobench is the colocation benchmark's workloads, one static
// binary for one image:
//
//	colobench serve --listen 127.0.0.1:18080 --cpu 1ms     the Prod server
//	colobench burn --kind cpu|mem --threads 1 --progress /out/b1.jsonl
//	colobench load --url http://127.0.0.1:18080/work --phases 30s@700,30s@300 [--arrival poisson] [--out result.json]
//
// serve and burn run in pods (hostNetwork; serve listens on loopback),
// load runs on the node outside the pods it measures.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/waterline-dev/waterline/test/bench/colocation/loadgen"
	"github.com/waterline-dev/waterline/test/bench/colocation/workload"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(ctx, os.Args[2:])
	case "burn":
		err = burn(ctx, os.Args[2:])
	case "load":
		err = load(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "colobench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: colobench serve|burn|load [flags]  (colobench <cmd> -h for flags)")
	os.Exit(2)
}

func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:18080", "Address to listen on; must be loopback.")
	cpu := fs.Duration("cpu", time.Millisecond, "Thread CPU time each request burns (0: use --steps).")
	steps := fs.Int("steps", 0, "Fixed work per request in kernel steps instead of --cpu.")
	_ = fs.Parse(args)
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", *listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q: not a loopback address", *listen)
	}
	cfg := workload.ServerConfig{CPU: *cpu, Steps: *steps}
	if *steps > 0 {
		cfg.CPU = 0
	}
	h, err := workload.NewServer(cfg)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Printf("serving on %s, %+v\n", *listen, cfg)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func burn(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("burn", flag.ExitOnError)
	var cfg workload.BurnerConfig
	fs.StringVar(&cfg.Kind, "kind", workload.KindCPU, "cpu or mem.")
	fs.IntVar(&cfg.Threads, "threads", 1, "Burning threads.")
	fs.IntVar(&cfg.MemBytes, "mem-bytes", 64<<20, "Buffer of the mem kind, bytes.")
	fs.DurationVar(&cfg.Ramp, "ramp", 0, "Grow the mem buffer to --mem-bytes over this long (0: all at once).")
	fs.StringVar(&cfg.Progress, "progress", "", "File to append progress lines to (JSON lines).")
	fs.DurationVar(&cfg.Interval, "interval", time.Second, "Progress line interval.")
	fs.StringVar(&cfg.Name, "name", os.Getenv("POD_NAME"), "Name in the progress lines (default $POD_NAME).")
	_ = fs.Parse(args)
	units, err := workload.RunBurner(ctx, cfg)
	fmt.Printf("%d units\n", units)
	return err
}

func load(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	var cfg loadgen.Config
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:18080/work", "URL to GET; loopback only.")
	phases := fs.String("phases", "10s@100", "Offered load: comma-separated <duration>@<requests/s>.")
	fs.StringVar(&cfg.Arrival, "arrival", loadgen.Poisson, "constant or poisson.")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "Seed of the Poisson arrivals.")
	fs.DurationVar(&cfg.Timeout, "timeout", 2*time.Second, "Per-request timeout.")
	fs.DurationVar(&cfg.Window, "window", time.Second, "Timeline window.")
	out := fs.String("out", "", "Write the JSON result here (default stdout).")
	_ = fs.Parse(args)
	var err error
	if cfg.Phases, err = ParsePhases(*phases); err != nil {
		return err
	}
	res, runErr := loadgen.Run(ctx, cfg)
	if res == nil {
		return runErr
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = os.Stdout.Write(append(b, '\n'))
	} else {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "offered %.1f/s achieved %.1f/s errors %d p50 %v p99 %v p99.9 %v max %v\n",
		res.OfferedRate, res.AchievedRate, res.Errors, time.Duration(res.Latency.P50), time.Duration(res.Latency.P99),
		time.Duration(res.Latency.P999), time.Duration(res.Latency.Max))
	return runErr
}

// ParsePhases reads "30s@700,30s@300".
func ParsePhases(s string) ([]loadgen.Phase, error) {
	var out []loadgen.Phase
	for i, part := range strings.Split(s, ",") {
		d, r, ok := strings.Cut(strings.TrimSpace(part), "@")
		if !ok {
			return nil, fmt.Errorf("--phases %q: part %d %q: want <duration>@<rate>", s, i, part)
		}
		dur, err := time.ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("--phases %q: part %d duration: %w", s, i, err)
		}
		rate, err := strconv.ParseFloat(r, 64)
		if err != nil {
			return nil, fmt.Errorf("--phases %q: part %d rate: %w", s, i, err)
		}
		out = append(out, loadgen.Phase{Duration: dur, Rate: rate})
	}
	return out, nil
}
