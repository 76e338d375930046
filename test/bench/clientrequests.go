package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
)

// clientRequests reads the requests a manager's own client made, by
// method (controller-runtime's rest_client_requests_total, every code and
// host summed), from its plain-HTTP metrics endpoint. The API server's
// apiserver_request_total cannot tell managers apart; this can.
func clientRequests(ctx context.Context, metricsAddr string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics at %s: %w", metricsAddr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics at %s: %w", metricsAddr, err)
	}
	out := map[string]float64{}
	eachSample(string(body), "rest_client_requests_total", func(l map[string]string, v float64) {
		out[cmp.Or(l["method"], "?")] += v
	})
	return out, nil
}

// methodDiff is after − before by method, and their total.
func methodDiff(after, before map[string]float64) (map[string]float64, float64) {
	d := map[string]float64{}
	total := 0.0
	for k, v := range after {
		if diff := v - before[k]; diff > 0 {
			d[k] = diff
			total += diff
		}
	}
	return d, total
}
