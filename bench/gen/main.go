// Command gen writes a large Invariant JSONL dataset made from the shared
// corpus (the 200 tau-bench traces, repeated), for throughput and memory
// measurements: go run ./bench/gen -size 200MB -o /tmp/traces.jsonl
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/lookout-dev/lookout/bench/corpusdata"
)

func main() {
	size := flag.String("size", "200MB", "approximate output size (KB, MB, GB suffixes)")
	out := flag.String("o", "", "output file (required)")
	corpus := flag.String("corpus", "../shared/corpus", "the shared corpus directory")
	flag.Parse()
	n, err := parseSize(*size)
	if err != nil || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: gen -size 200MB -o FILE [-corpus DIR]")
		os.Exit(2)
	}
	written, traces, err := corpusdata.WriteJSONL(*out, *corpus, n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(2)
	}
	fmt.Printf("%s: %d bytes, %d traces\n", *out, written, traces)
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	u := strings.ToUpper(s)
	for suffix, m := range map[string]int64{"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30} {
		if strings.HasSuffix(u, suffix) {
			mult, u = m, strings.TrimSuffix(u, suffix)
		}
	}
	v, err := strconv.ParseInt(u, 10, 64)
	return v * mult, err
}
