package main

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// requestCounts is apiserver_request_total summed by verb, resource,
// subresource and dry-run, read from the API server's /metrics.
type requestCounts map[string]float64

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

func readRequestCounts(ctx context.Context, cs kubernetes.Interface) (requestCounts, error) {
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading API server metrics: %w", err)
	}
	out := requestCounts{}
	eachSample(string(raw), "apiserver_request_total", func(l map[string]string, v float64) {
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		if l["dry_run"] != "" {
			key += " (dry-run)"
		}
		out[key] += v
	})
	return out, nil
}

// eachSample calls fn with the labels and the value of every sample of
// the metric name in body, a Prometheus text exposition.
func eachSample(body, name string, fn func(labels map[string]string, v float64)) {
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, m := range labelRE.FindAllStringSubmatch(line[:end], -1) {
			l[m[1]] = m[2]
		}
		fn(l, v)
	}
}

// top formats the n largest differences between c and before.
func (c requestCounts) top(before requestCounts, n int) string {
	type kv struct {
		k string
		v float64
	}
	var d []kv
	total := 0.0
	for k, v := range c {
		if diff := v - before[k]; diff > 0 {
			d = append(d, kv{k, diff})
			total += diff
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i].v > d[j].v })
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f requests", total)
	for i := 0; i < len(d) && i < n; i++ {
		fmt.Fprintf(&b, "; %s %.0f", d[i].k, d[i].v)
	}
	return b.String()
}

// sum is the number of requests made since before.
func (c requestCounts) sum(before requestCounts) float64 {
	total := 0.0
	for k, v := range c {
		if diff := v - before[k]; diff > 0 {
			total += diff
		}
	}
	return total
}
