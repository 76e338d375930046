package main

import (
	"fmt"
	"strings"
	"time"
)

// The names of the side-by-side table's rows that the goals compare.
const (
	rowSSAFloor     = "SSA floor"
	rowRukpak       = "rukpak"
	rowRequestFloor = "request floor"
	rowHelmSDK      = "Helm 4 SDK"
	rowHelmCLI      = "Helm 4 CLI"
	rowFlux         = "Flux"
)

// formatTable formats rows side by side: each row's wall time against
// the SSA floor's (floor, the mean of its two runs), rukpak's against the
// request floor's, its requests, the CPU seconds of the API server, etcd,
// the manager and the installer, the CPU of the API server, etcd and the
// installer together against the SSA floor's, and the installer's peak
// RSS. Then each row's requests by verb and resource.
func formatTable(rows []row, floor time.Duration) string {
	var b strings.Builder
	var floorCPU, reqFloor float64
	for _, r := range rows {
		switch r.name {
		case rowSSAFloor:
			floorCPU = r.clusterCPU()
		case rowRequestFloor:
			reqFloor = r.wall.Seconds()
		}
	}
	fmt.Fprintf(&b, "%-14s %7s %6s %8s %9s %9s %6s %7s %9s %6s %7s\n", "scenario", "wall s", "×SSA", "×request", "requests",
		"apiserver", "etcd", "manager", "installer", "CPU ×", "RSS MiB")
	for _, r := range rows {
		rss, req, cpu := "-", "-", "-"
		if r.rssMiB > 0 {
			rss = fmt.Sprintf("%.0f", r.rssMiB)
		}
		if r.name == rowRukpak && reqFloor > 0 {
			req = fmt.Sprintf("%.2f", r.wall.Seconds()/reqFloor)
		}
		if floorCPU > 0 {
			cpu = fmt.Sprintf("%.2f", r.clusterCPU()/floorCPU)
		}
		fmt.Fprintf(&b, "%-14s %7.1f %6.2f %8s %9.0f %9.1f %6.1f %7.1f %9.1f %6s %7s\n", r.name, r.wall.Seconds(), r.wall.Seconds()/floor.Seconds(), req,
			r.total, r.cpu[1], r.cpu[2], r.cpu[0], r.installer, cpu, rss)
	}
	b.WriteString(`(wall: until all are Installed, deployed or Ready; ×SSA: against the SSA floor (the mean of its two runs; its CPU and
 requests are those of the run after the install); ×request: rukpak against the request floor; CPU seconds of the API server,
 etcd, the manager (idle but for watches in the peers' runs) and the installer: the manager for rukpak, this process for the
 floors and the SDK, the helm processes together for the CLI, source-controller and kustomize-controller together for Flux;
 CPU ×: API server, etcd and installer together against the SSA floor's; RSS: the installer's peak, for Flux the sum of both
 controllers' peaks, for the CLI the largest helm process's, for the SDK this process's during its run.)
`)
	for _, r := range rows {
		fmt.Fprintf(&b, "requests, %s: %s\n", r.name, strings.TrimPrefix(r.requests, fmt.Sprintf("%.0f requests; ", r.total)))
	}
	return b.String()
}

// clusterCPU is the CPU seconds of the API server, etcd and the installer.
func (r row) clusterCPU() float64 { return r.cpu[1] + r.cpu[2] + r.installer }

// goal is one of the side-by-side goals, evaluated on one run.
type goal struct {
	name     string  // as printed in the figure line
	want     string  // the goal, e.g. "<=1.15"
	value    float64 // the measured ratio; 0: not measured
	met      bool
	measured bool
}

// goals evaluates, from one run's rows, rukpak's goals against its peers:
// at most 1.15 times the request floor's wall time, at least 3 times
// faster than the Helm 4 SDK and at least 6 times faster than Flux.
func goals(rows []row) []goal {
	wall := map[string]float64{}
	for _, r := range rows {
		wall[r.name] = r.wall.Seconds()
	}
	ratio := func(num, den string) (float64, bool) {
		n, d := wall[num], wall[den]
		if n <= 0 || d <= 0 {
			return 0, false
		}
		return n / d, true
	}
	var out []goal
	v, ok := ratio(rowRukpak, rowRequestFloor)
	out = append(out, goal{name: "rukpak-over-request-floor", want: "<=1.15", value: v, measured: ok, met: ok && v <= 1.15})
	v, ok = ratio(rowHelmSDK, rowRukpak)
	out = append(out, goal{name: "helm-sdk-over-rukpak", want: ">=3", value: v, measured: ok, met: ok && v >= 3})
	v, ok = ratio(rowFlux, rowRukpak)
	out = append(out, goal{name: "flux-over-rukpak", want: ">=6", value: v, measured: ok, met: ok && v >= 6})
	return out
}

// String formats g as the bench's figure lines do.
func (g goal) String() string {
	if !g.measured {
		return fmt.Sprintf("bench peers %s=- goal %s NOT MEASURED", g.name, g.want)
	}
	verdict := "NOT MET"
	if g.met {
		verdict = "MET"
	}
	return fmt.Sprintf("bench peers %s=%.2f goal %s %s", g.name, g.value, g.want, verdict)
}
