package main

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func benchRows() []row {
	cpu := func(manager, apiserver, etcd float64) cpuSample { return cpuSample{manager, apiserver, etcd, 0} }
	return []row{
		{name: rowSSAFloor, wall: 10 * time.Second, cpu: cpu(0, 8, 2), installer: 2, total: 10000, requests: "10000 requests; apply configmaps 10000"},
		{name: rowRukpak, wall: 24 * time.Second, cpu: cpu(12, 30, 6), installer: 12, rssMiB: 127, total: 15010, requests: "15010 requests; create configmaps 11000"},
		{name: rowRequestFloor, wall: 20 * time.Second, cpu: cpu(3, 25, 5), installer: 4, total: 15000, requests: "15000 requests; create configmaps 11000"},
		{name: rowHelmSDK, wall: 80 * time.Second, cpu: cpu(1, 40, 8), installer: 30, rssMiB: 220, total: 27000, requests: "27000 requests"},
		{name: rowFlux, wall: 120 * time.Second, cpu: cpu(1, 50, 9), installer: 60, rssMiB: 590, total: 42000, requests: "42000 requests; get gitrepositories 5"},
	}
}

func TestFormatTable(t *testing.T) {
	out := formatTable(benchRows(), 10*time.Second)
	lines := strings.Split(out, "\n")
	find := func(name string) []string {
		for _, l := range lines {
			if strings.HasPrefix(l, name+" ") {
				return strings.Fields(strings.TrimPrefix(l, name))
			}
		}
		t.Fatalf("no row %q in\n%s", name, out)
		return nil
	}
	// wall, ×SSA, ×request, requests, apiserver, etcd, manager, installer, CPU ×, RSS
	if got, want := strings.Join(find(rowRukpak), " "), "24.0 2.40 1.20 15010 30.0 6.0 12.0 12.0 4.00 127"; got != want {
		t.Errorf("rukpak row: %q, want %q", got, want)
	}
	if got, want := strings.Join(find(rowFlux), " "), "120.0 12.00 - 42000 50.0 9.0 1.0 60.0 9.92 590"; got != want {
		t.Errorf("Flux row: %q, want %q", got, want)
	}
	if got := find(rowSSAFloor); got[len(got)-1] != "-" || got[len(got)-2] != "1.00" {
		t.Errorf("SSA floor row: %q, want no RSS and a CPU ratio of 1.00", got)
	}
	if !strings.Contains(out, "requests, Flux: get gitrepositories 5\n") {
		t.Errorf("no requests of Flux by verb and resource in\n%s", out)
	}
}

func TestGoals(t *testing.T) {
	got := goals(benchRows())
	want := []string{
		"bench peers rukpak-over-request-floor=1.20 goal <=1.15 NOT MET",
		"bench peers helm-sdk-over-rukpak=3.33 goal >=3 MET",
		"bench peers flux-over-rukpak=5.00 goal >=6 NOT MET",
	}
	if len(got) != len(want) {
		t.Fatalf("%d goals, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("goal %d: %q, want %q", i, got[i], want[i])
		}
	}
	// Without Flux (it could not run here) its goal is not measured.
	rows := benchRows()[:4]
	if g := goals(rows)[2]; g.measured || g.String() != "bench peers flux-over-rukpak=- goal >=6 NOT MEASURED" {
		t.Errorf("goal without Flux: %q", g)
	}
}

func TestParseModuleList(t *testing.T) {
	out := "github.com/fluxcd/source-controller v1.9.3 /mod/source-controller@v1.9.3\n" +
		"github.com/fluxcd/kustomize-controller v1.9.6 /mod/kustomize-controller@v1.9.6\n"
	versions, dirs, err := parseModuleList(out, fluxModules)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(versions, " ") != "v1.9.3 v1.9.6" || dirs[1] != "/mod/kustomize-controller@v1.9.6" {
		t.Errorf("versions %q, dirs %q", versions, dirs)
	}
	// A module that is not downloaded has no directory: the error says so.
	_, _, err = parseModuleList("github.com/fluxcd/source-controller v1.9.3\ngithub.com/fluxcd/kustomize-controller v1.9.6 /d\n", fluxModules)
	if err == nil || !strings.Contains(err.Error(), "not in the module cache") {
		t.Errorf("error %v, want one naming the module cache", err)
	}
	if _, _, err := parseModuleList("", fluxModules); err == nil {
		t.Error("no error for an empty list")
	}
}

func TestFluxReady(t *testing.T) {
	obj := func(gen, observed int64, status string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
			"observedGeneration": observed,
			"conditions": []any{
				map[string]any{"type": "Reconciling", "status": "True"},
				map[string]any{"type": "Ready", "status": status, "message": "Applied revision: main@sha1:abc"},
			}}}}
		u.SetGeneration(gen)
		return u
	}
	for _, tc := range []struct {
		name string
		u    *unstructured.Unstructured
		want bool
	}{
		{"ready", obj(1, 1, "True"), true},
		{"not ready", obj(1, 1, "False"), false},
		{"ready for an older generation", obj(2, 1, "True"), false},
		{"no status", &unstructured.Unstructured{Object: map[string]any{}}, false},
	} {
		if got, _ := fluxReady(tc.u); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
