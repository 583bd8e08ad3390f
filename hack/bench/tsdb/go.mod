// Scratch module for the TSDB comparison in ../../README.md. It is kept here
// for reproducibility only; go tooling ignores testdata, and this module
// never joins the Waterline module. Run it from a copy outside the repo:
//
//	cp -r hack/bench/tsdb /tmp/tsdbbench && cd /tmp/tsdbbench
//	go mod tidy && go build -o tsdbbench . && ./tsdbbench && ./tsdbbench -wal=false
module tsdbbench

go 1.26.0

require github.com/prometheus/prometheus v0.310.0
