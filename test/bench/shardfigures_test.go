package main

import (
	"strings"
	"testing"
)

func TestProject(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		total                       int
		baseline, global, own, cpu  float64
		feasible                    bool
		shards, perManager, maxHeld int
		rss                         float64
	}{
		// room = 1024 − 100 − 0.004 × 50000 = 724; 724 / 0.1 = 7240 held;
		// ceil(50000 / 7240) = 7 shards of ceil(50000 / 7) = 7143.
		{name: "memory per BundleDeployment held decides", total: 50000, baseline: 100, global: 0.004, own: 0.1, cpu: 3,
			feasible: true, shards: 7, perManager: 7143, maxHeld: 7240, rss: 100 + 200 + 714.3},
		// One manager holds all: 100 + 0.01 × 50000 = 600 ≤ 1024.
		{name: "one manager suffices", total: 50000, baseline: 100, global: 0, own: 0.01, cpu: 3,
			feasible: true, shards: 1, perManager: 50000, maxHeld: 50000, rss: 600},
		// Every manager caches every BundleDeployment's ConfigMaps:
		// 100 + 0.02 × 50000 = 1100 > 1024 whatever the shards.
		{name: "what every manager caches leaves no room", total: 50000, baseline: 100, global: 0.02, own: 0.1, cpu: 3},
		// A negative own (noise) counts as 0: one manager.
		{name: "negative own growth is no growth", total: 1000, baseline: 100, global: 0.01, own: -0.02, cpu: 3,
			feasible: true, shards: 1, perManager: 1000, maxHeld: 1000, rss: 110},
		// Room for less than one BundleDeployment per manager.
		{name: "room below one BundleDeployment", total: 10, baseline: 1023.5, global: 0, own: 1, cpu: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := project(tc.total, 1024, tc.baseline, tc.global, tc.own, tc.cpu)
			if p.feasible != tc.feasible || p.shards != tc.shards || p.perManager != tc.perManager || p.maxHeld != tc.maxHeld {
				t.Fatalf("feasible %v, %d shards of %d, at most %d held; want %v, %d of %d, %d", p.feasible, p.shards, p.perManager, p.maxHeld,
					tc.feasible, tc.shards, tc.perManager, tc.maxHeld)
			}
			if d := p.rssMiB - tc.rss; d > 0.01 || d < -0.01 {
				t.Errorf("RSS per manager %.2f MiB, want %.2f", p.rssMiB, tc.rss)
			}
			if p.feasible && p.rssMiB > 1024 {
				t.Errorf("RSS per manager %.1f MiB over the limit", p.rssMiB)
			}
			out := strings.Join(p.lines(), "\n")
			if !strings.Contains(out, "bench shards projection-") {
				t.Errorf("no figure line in\n%s", out)
			}
		})
	}
	p := project(50000, 1024, 100, 0.004, 0.1, 3)
	out := strings.Join(p.lines(), "\n")
	for _, want := range []string{
		"room = 1024 − 100.0 − 0.0040 × 50000 = 724.0 MiB",
		"shards = ceil(50000 / 7240) = 7, each holding ceil(50000 / 7) = 7143",
		"CPU per manager to install its share = 3.00 ms × 7143 = 21.4 s",
		"bench shards projection-50000-shards=7 goal (report) MET",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

func TestShardFigures(t *testing.T) {
	one := managerFigures{name: "one-manager", baselineMiB: 50, peakMiB: 150, held: 1000, cpuSeconds: 12}
	shard := func(name string, peak float64) managerFigures {
		return managerFigures{name: name, baselineMiB: 60, peakMiB: peak, held: 500, cpuSeconds: 5}
	}
	for _, tc := range []struct {
		name string
		r    shardResult
		want []string
	}{
		{
			name: "goals met",
			r:    shardResult{bundles: 1000, oneRequests: 15000, shardRequests: 15600, one: one, shards: []managerFigures{shard("shard-0", 100), shard("shard-1", 110)}},
			want: []string{
				"bench shards requests-ratio=1.040 goal <=1.05 MET",
				"bench shards idle-writes=0 goal ==0 MET",
				"bench shards peak-rss-mib-one-manager=150 goal (report) MET",
				"bench shards rss-mib-per-1000-bd-one-manager=100.0 goal (report) MET",
				"bench shards cpu-ms-per-install-one-manager=12.00 goal (report) MET",
				"bench shards rss-mib-per-1000-bd-shard-1=100.0 goal (report) MET",
				"bench shards cpu-ms-per-install-shard-1=10.00 goal (report) MET",
			},
		},
		{
			name: "more requests, writes while idle",
			r:    shardResult{bundles: 1000, oneRequests: 15000, shardRequests: 16000, idleWrites: 3, one: one},
			want: []string{
				"bench shards requests-ratio=1.067 goal <=1.05 NOT MET",
				"bench shards idle-writes=3 goal ==0 NOT MET",
			},
		},
		{
			name: "no requests measured",
			r:    shardResult{one: one},
			want: []string{"bench shards requests-ratio=- goal <=1.05 NOT MEASURED"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := strings.Join(tc.r.figures(), "\n")
			for _, w := range tc.want {
				if !strings.Contains(out, w+"\n") && !strings.HasSuffix(out, w) {
					t.Errorf("no %q in\n%s", w, out)
				}
			}
		})
	}
}

func TestProjectShards(t *testing.T) {
	// The one manager started at 96 MiB in an empty cluster; the shards
	// at 100 and 100 MiB with 1000 BundleDeployments of phase one in it:
	// g = 4 / 1000 = 0.004. The busiest shard grew 54 MiB holding 500
	// while 1000 were installed: p = (54 − 0.004 × 1000) / 500 = 0.1.
	r := shardResult{bundles: 1000,
		one: managerFigures{baselineMiB: 96, peakMiB: 200, held: 1000},
		shards: []managerFigures{
			{baselineMiB: 98, peakMiB: 140, held: 500, cpuSeconds: 1.0},
			{baselineMiB: 102, peakMiB: 156, held: 500, cpuSeconds: 1.5},
		}}
	p := projectShards(r, 50000, 1024, gStart)
	if p.baselineMiB != 96 || p.globalMiB != 0.004 || p.ownMiB != 0.1 || p.cpuMsPerInstall != 3 {
		t.Errorf("B %v, g %v, p %v, CPU %v ms; want 96, 0.004, 0.1, 3", p.baselineMiB, p.globalMiB, p.ownMiB, p.cpuMsPerInstall)
	}
	// room = 1024 − 96 − 200 = 728: 7280 held, ceil(50000 / 7280) = 7.
	if p.shards != 7 {
		t.Errorf("%d shards, want 7", p.shards)
	}
	// Shards that started below the one manager: g is 0, not negative.
	r.shards[0].baselineMiB, r.shards[1].baselineMiB = 90, 92
	if p := projectShards(r, 50000, 1024, gStart); p.globalMiB != 0 {
		t.Errorf("g %v, want 0", p.globalMiB)
	}
	// g-running: the unsharded manager grew 20 MiB holding none of the
	// 1000: g = 0.02, p = (54 − 20) / 500 = 0.068; room = 1024 − 96 −
	// 1000 < 0: no number of shards.
	r.unsharded = managerFigures{baselineMiB: 130, peakMiB: 150}
	p = projectShards(r, 50000, 1024, gRunning)
	if p.globalMiB != 0.02 || p.feasible {
		t.Errorf("g %v, feasible %v; want 0.02, false", p.globalMiB, p.feasible)
	}
	if out := strings.Join(p.lines(), "\n"); !strings.Contains(out, "bench shards projection-50000-shards-g-running=- goal (report) MET") {
		t.Errorf("no g-running figure in\n%s", out)
	}
}

func TestHeldBy(t *testing.T) {
	for _, tc := range []struct{ n, k, s, want int }{
		{1000, 3, 0, 334}, {1000, 3, 1, 333}, {1000, 3, 2, 333}, {100, 2, 1, 50}, {2, 3, 2, 0},
	} {
		if got := heldBy(tc.n, tc.k, tc.s); got != tc.want {
			t.Errorf("heldBy(%d, %d, %d) = %d, want %d", tc.n, tc.k, tc.s, got, tc.want)
		}
	}
}
