// Command testreport reads the JSON events of `go test -json` on its
// standard input, prints the tests' output as `go test` would, writes the
// events to the file named by -json, and ends with the time each package
// took, slowest first, so that slow packages show in every run (and in
// CI's log). It exits 1 when a package or test failed, or a package did
// not report its end (a build failure, a crash).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// result is how one package ended.
type result struct {
	pkg     string
	action  string
	elapsed time.Duration
}

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
	results, ok := report(os.Stdin, os.Stdout, sink)
	summary(os.Stdout, results, *top)
	if !ok {
		os.Exit(1)
	}
}

// report copies the output of the events in r to w and the events to
// sink, and returns how each package ended and whether all passed.
func report(r io.Reader, w, sink io.Writer) ([]result, bool) {
	ok := true
	started := map[string]bool{}
	var results []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		fmt.Fprintf(sink, "%s\n", line)
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			// Not an event: go test's own output (a build error).
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		fmt.Fprint(w, ev.Output)
		switch {
		case ev.Action == "start" && ev.Test == "":
			started[ev.Package] = true
		case ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
			delete(started, ev.Package)
			results = append(results, result{pkg: ev.Package, action: ev.Action, elapsed: time.Duration(ev.Elapsed * float64(time.Second))})
			if ev.Action == "fail" {
				ok = false
			}
		case ev.Action == "fail":
			ok = false
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(w, "testreport: reading events:", err)
		ok = false
	}
	for pkg := range started {
		fmt.Fprintf(w, "testreport: package %s did not report its end\n", pkg)
		ok = false
	}
	return results, ok
}

// summary lists the top slowest packages of results.
func summary(w io.Writer, results []result, top int) {
	sort.Slice(results, func(a, b int) bool { return results[a].elapsed > results[b].elapsed })
	var total time.Duration
	for _, r := range results {
		total += r.elapsed
	}
	fmt.Fprintf(w, "\n%d packages, %s of package time; slowest:\n", len(results), total.Round(time.Second))
	for _, r := range results[:min(top, len(results))] {
		fmt.Fprintf(w, "  %8s  %-4s  %s\n", r.elapsed.Round(100*time.Millisecond), r.action, r.pkg)
	}
}
