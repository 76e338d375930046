package main

import (
	"cmp"
	"fmt"
	"math"
)

// managerFigures is what one phase of the shard scenario measured of one
// manager process.
type managerFigures struct {
	name        string
	baselineMiB float64 // VmRSS before the phase's BundleDeployments existed
	peakMiB     float64 // VmHWM at the end of the phase (reset at its start)
	held        int     // BundleDeployments it installed in the phase
	cpuSeconds  float64 // user+system CPU seconds in the phase
	requests    float64 // its own client's requests in the phase (rest_client_requests_total)
}

// growthMiB is how much the manager's peak RSS exceeded its baseline.
func (m managerFigures) growthMiB() float64 { return m.peakMiB - m.baselineMiB }

// perThousandMiB is the RSS growth per 1000 BundleDeployments held; 0 when
// it holds none.
func (m managerFigures) perThousandMiB() float64 {
	if m.held == 0 {
		return 0
	}
	return m.growthMiB() / float64(m.held) * 1000
}

// cpuMsPerInstall is the CPU milliseconds per BundleDeployment installed;
// 0 when it installed none.
func (m managerFigures) cpuMsPerInstall() float64 {
	if m.held == 0 {
		return 0
	}
	return m.cpuSeconds / float64(m.held) * 1000
}

// shardResult is the shard scenario's measurements: phase "one manager"
// (one), phase "K shards" (the unsharded manager, holding none of the
// phase's BundleDeployments, and each shard's), and the idle minute.
type shardResult struct {
	bundles       int            // BundleDeployments per phase
	oneRequests   float64        // API server requests of phase 1
	shardRequests float64        // API server requests of phase 2
	idleWrites    int            // write requests while idle
	one           managerFigures // the unsharded manager in phase 1
	unsharded     managerFigures // the unsharded manager in phase 2
	shards        []managerFigures
}

// maxRequestRatio is the goal: the shards' phase costs the API server at
// most this many times the requests of one manager's.
const maxRequestRatio = 1.05

// figureLine formats one figure as the bench's figure lines do.
func figureLine(name, value, goal string, met bool) string {
	verdict := "NOT MET"
	if met {
		verdict = "MET"
	}
	return fmt.Sprintf("bench shards %s=%s goal %s %s", name, value, goal, verdict)
}

// figures evaluates r's goals (the K-shard phase's requests against the
// one-manager phase's, writes while idle) and formats its report-only
// figures (peak RSS, RSS per 1000 BundleDeployments held and CPU per
// install of each manager).
func (r shardResult) figures() []string {
	var out []string
	if r.oneRequests > 0 {
		ratio := r.shardRequests / r.oneRequests
		out = append(out, figureLine("requests-ratio", fmt.Sprintf("%.3f", ratio), fmt.Sprintf("<=%.2f", maxRequestRatio), ratio <= maxRequestRatio))
	} else {
		out = append(out, "bench shards requests-ratio=- goal <=1.05 NOT MEASURED")
	}
	out = append(out, figureLine("idle-writes", fmt.Sprint(r.idleWrites), "==0", r.idleWrites == 0))
	for _, m := range append([]managerFigures{r.one}, r.shards...) {
		out = append(out,
			figureLine("peak-rss-mib-"+m.name, fmt.Sprintf("%.0f", m.peakMiB), "(report)", true),
			figureLine("rss-mib-per-1000-bd-"+m.name, fmt.Sprintf("%.1f", m.perThousandMiB()), "(report)", true),
			figureLine("cpu-ms-per-install-"+m.name, fmt.Sprintf("%.2f", m.cpuMsPerInstall()), "(report)", true))
	}
	return out
}

// projection is how many shard managers keep each under limitMiB of peak
// RSS with total BundleDeployments, by the model
//
//	RSS = baseline + global × total + own × held
//
// where every manager pays global per BundleDeployment in the cluster
// (it caches rukpak-system's ConfigMaps: sources and inventories) and own
// per BundleDeployment it holds.
type projection struct {
	basis                        string // how g was measured: gStart or gRunning; "" names no basis
	total                        int
	limitMiB                     float64
	baselineMiB                  float64 // an idle shard manager's RSS
	globalMiB, ownMiB            float64 // per BundleDeployment
	cpuMsPerInstall              float64
	feasible                     bool    // some number of shards stays under the limit
	roomMiB                      float64 // limit − baseline − global × total
	maxHeld                      int     // BundleDeployments one manager may hold
	shards, perManager           int
	rssMiB, cpuSecondsPerManager float64
}

// project computes the projection for total BundleDeployments. ownMiB
// below 0 (noise: the shards grew less than the unsharded manager did
// without holding any) counts as 0.
func project(total int, limitMiB, baselineMiB, globalMiB, ownMiB, cpuMsPerInstall float64) projection {
	p := projection{total: total, limitMiB: limitMiB, baselineMiB: baselineMiB, globalMiB: globalMiB,
		ownMiB: math.Max(ownMiB, 0), cpuMsPerInstall: cpuMsPerInstall}
	p.roomMiB = limitMiB - baselineMiB - globalMiB*float64(total)
	switch {
	case p.roomMiB <= 0:
		return p // no number of shards: each caches every BundleDeployment's ConfigMaps
	case p.ownMiB == 0:
		p.maxHeld = total
	default:
		p.maxHeld = int(math.Min(math.Floor(p.roomMiB/p.ownMiB), float64(total)))
	}
	if p.maxHeld < 1 {
		return p
	}
	p.feasible = true
	p.shards = (total + p.maxHeld - 1) / p.maxHeld
	p.perManager = (total + p.shards - 1) / p.shards
	p.rssMiB = baselineMiB + globalMiB*float64(total) + p.ownMiB*float64(p.perManager)
	p.cpuSecondsPerManager = cpuMsPerInstall * float64(p.perManager) / 1000
	return p
}

// lines prints the projection's arithmetic, for a reader to check, and
// its figure lines.
func (p projection) lines() []string {
	name := func(figure string) string {
		if p.basis == "" {
			return fmt.Sprintf("projection-%d-%s", p.total, figure)
		}
		return fmt.Sprintf("projection-%d-%s-%s", p.total, figure, p.basis)
	}
	out := []string{
		fmt.Sprintf("projection for %d BundleDeployments, each manager under %.0f MiB peak RSS (%s):", p.total, p.limitMiB, cmp.Or(p.basis, "g given")),
		"  RSS = B + g × total + p × held",
		fmt.Sprintf("  B = %.1f MiB, g = %.4f MiB, p = %.4f MiB (per BundleDeployment)", p.baselineMiB, p.globalMiB, p.ownMiB),
		fmt.Sprintf("  room = %.0f − %.1f − %.4f × %d = %.1f MiB", p.limitMiB, p.baselineMiB, p.globalMiB, p.total, p.roomMiB),
	}
	if !p.feasible {
		out = append(out, "  no number of shards keeps a manager under the limit: what every manager caches for all BundleDeployments leaves no room",
			figureLine(name("shards"), "-", "(report)", true))
		return out
	}
	maxHeld := fmt.Sprintf("floor(%.1f / %.4f) = %d", p.roomMiB, p.ownMiB, p.maxHeld)
	if p.ownMiB == 0 {
		maxHeld = fmt.Sprintf("all %d (p is 0)", p.total)
	}
	out = append(out,
		"  held per manager at most "+maxHeld,
		fmt.Sprintf("  shards = ceil(%d / %d) = %d, each holding ceil(%d / %d) = %d", p.total, p.maxHeld, p.shards, p.total, p.shards, p.perManager),
		fmt.Sprintf("  RSS per manager = %.1f + %.4f × %d + %.4f × %d = %.1f MiB", p.baselineMiB, p.globalMiB, p.total, p.ownMiB, p.perManager, p.rssMiB),
		fmt.Sprintf("  CPU per manager to install its share = %.2f ms × %d = %.1f s (all %d: %.1f s)", p.cpuMsPerInstall, p.perManager, p.cpuSecondsPerManager,
			p.total, p.cpuMsPerInstall*float64(p.total)/1000),
		figureLine(name("shards"), fmt.Sprint(p.shards), "(report)", true),
		figureLine(name("rss-mib-per-manager"), fmt.Sprintf("%.0f", p.rssMiB), "(report)", true),
		figureLine(name("cpu-s-per-manager"), fmt.Sprintf("%.1f", p.cpuSecondsPerManager), "(report)", true))
	return out
}

// The two ways projectShards measures g, what every manager pays per
// BundleDeployment in the cluster whether or not it holds it.
const (
	// gStart: what the shard managers' RSS at start (phase one's
	// BundleDeployments in the cluster, none held) exceeds the one
	// manager's before phase one (none in the cluster) by.
	gStart = "g-start"
	// gRunning: what the unsharded manager grew by in phase two, holding
	// none of its BundleDeployments; it includes what a running manager's
	// heap keeps for the watch events of others' BundleDeployments.
	gRunning = "g-running"
)

// projectShards derives the projection's inputs from r, with g measured
// as basis says (gStart or gRunning). B: the one manager's RSS before
// phase one, when the cluster had no BundleDeployment. p: the busiest
// shard's growth in phase two less g × the phase's BundleDeployments (it
// caches every shard's ConfigMaps), per BundleDeployment it held. CPU:
// the busiest shard's per install.
func projectShards(r shardResult, total int, limitMiB float64, basis string) projection {
	var own, cpu, baselines float64
	for _, s := range r.shards {
		baselines += s.baselineMiB
	}
	global := 0.0
	if r.bundles > 0 {
		switch {
		case basis == gRunning:
			global = math.Max(r.unsharded.growthMiB(), 0) / float64(r.bundles)
		case len(r.shards) > 0:
			global = math.Max(baselines/float64(len(r.shards))-r.one.baselineMiB, 0) / float64(r.bundles)
		}
	}
	for _, s := range r.shards {
		if s.held > 0 {
			own = math.Max(own, (s.growthMiB()-global*float64(r.bundles))/float64(s.held))
		}
		cpu = math.Max(cpu, s.cpuMsPerInstall())
	}
	p := project(total, limitMiB, r.one.baselineMiB, global, own, cpu)
	p.basis = basis
	return p
}
