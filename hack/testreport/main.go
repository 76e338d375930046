// Command testreport reads the JSON events of `go test -json` on its
// standard input, writes them all to the file named by -json (the
// artifact that keeps every test's output), and prints only what a CI log
// needs: a line per package (ok, FAIL or ?, with its time), the whole
// output of each failing test and of its parents, whatever a failing
// package printed outside its tests (a panic, a timeout, TestMain), build
// failures, and at the end the failed tests (each with the last lines it
// printed from its own _test.go files: why it failed, where a CI log shows
// only its end) and the slowest packages.
// It exits 1 when a build, a package or a test failed, a package did not
// report its end (a crash of go test, a cut stream), or no package
// reported anything.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

func main() {
	out := flag.String("json", "", "file to write the events to (none when empty)")
	top := flag.Int("top", 15, "how many of the slowest packages to list")
	flag.Parse()
	var sink io.Writer = io.Discard
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		sink = f
	}
	rep := report(os.Stdin, os.Stdout, sink)
	summary(os.Stdout, rep, *top)
	if len(rep.packages) == 0 {
		// Nothing was built or run (a build step that failed before
		// go test's first event): never a pass.
		fmt.Println("no package reported a result: no test was run")
		os.Exit(1)
	}
	if !rep.ok {
		os.Exit(1)
	}
}

// summary lists the failed tests of rep, each with the last lines it
// printed from its own test files, and rep's top slowest packages.
func summary(w io.Writer, rep *result, top int) {
	if len(rep.failed) > 0 {
		fmt.Fprintf(w, "\n%d failed:\n", len(rep.failed))
		for _, f := range rep.failed {
			fmt.Fprintf(w, "  %s\n", f)
			for _, line := range rep.why[f] {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
	pkgs := rep.packages
	sort.SliceStable(pkgs, func(a, b int) bool { return pkgs[a].elapsed > pkgs[b].elapsed })
	var total time.Duration
	for _, p := range pkgs {
		total += p.elapsed
	}
	fmt.Fprintf(w, "\n%d packages, %s of package time; slowest:\n", len(pkgs), total.Round(time.Second))
	for _, p := range pkgs[:min(top, len(pkgs))] {
		fmt.Fprintf(w, "  %8s  %-4s  %s\n", p.elapsed.Round(100*time.Millisecond), p.action, p.pkg)
	}
}
