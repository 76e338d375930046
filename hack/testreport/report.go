package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// event is one line of `go test -json` (`go doc test2json`), or of the
// build output interleaved with it (ImportPath, the actions build-output
// and build-fail: `go help buildjson`).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// pkgResult is how one package ended.
type pkgResult struct {
	pkg     string
	action  string // pass, fail or skip
	elapsed time.Duration
}

// result is what a stream of events came to.
type result struct {
	ok       bool
	packages []pkgResult
	failed   []string // failed tests, builds and packages, in the order they failed
	// why holds, for a failed test of failed, the last lines it printed
	// from its own _test.go files (its t.Error or t.Fatal, usually), so
	// that the summary at the end of a long log says why it failed.
	why map[string][]string
}

// test holds what a test printed while it ran, until it passes (and its
// output is dropped) or fails (and is printed).
type test struct {
	out   []byte
	shown int // bytes of out already printed
}

// pkg holds the tests of a package that have not ended, and what the
// package printed outside of them.
type pkg struct {
	tests  map[string]*test
	order  []string // of tests' first events
	out    []byte
	failed bool // one of its tests failed
}

type reporter struct {
	w       io.Writer
	pkgs    map[string]*pkg
	started []string // packages in the order they started
	res     result
}

// report reads the events of r, copies each line to sink, prints what a
// log needs of them to w (see the command's doc) and returns how the
// packages ended.
func report(r io.Reader, w, sink io.Writer) *result {
	rp := &reporter{w: w, pkgs: map[string]*pkg{}, res: result{ok: true, why: map[string][]string{}}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		fmt.Fprintf(sink, "%s\n", line)
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Action == "" {
			// Not an event: the go command's own output.
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		rp.event(ev)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(w, "testreport: reading events:", err)
		rp.res.ok = false
	}
	for _, name := range rp.started {
		if p := rp.pkgs[name]; p != nil {
			delete(rp.pkgs, name)
			rp.flush(name, p)
			fmt.Fprintf(w, "testreport: package %s did not report its end\n", name)
			rp.fail(name)
		}
	}
	return &rp.res
}

func (rp *reporter) event(ev event) {
	switch {
	case ev.Action == "build-output":
		fmt.Fprint(rp.w, ev.Output)
	case ev.Action == "build-fail":
		rp.fail(ev.ImportPath + " (build failed)")
	case ev.Test != "":
		rp.testEvent(ev)
	case ev.Action == "output":
		p := rp.pkg(ev.Package)
		p.out = append(p.out, ev.Output...)
	case ev.Action == "start":
		rp.pkg(ev.Package)
	case ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip":
		rp.end(ev)
	}
}

func (rp *reporter) testEvent(ev event) {
	p := rp.pkg(ev.Package)
	t := p.tests[ev.Test]
	if t == nil {
		t = &test{}
		p.tests[ev.Test] = t
		p.order = append(p.order, ev.Test)
	}
	switch ev.Action {
	case "output":
		t.out = append(t.out, ev.Output...)
	case "fail":
		rp.show(p, ev.Test)
		p.failed = true
		rp.fail(ev.Package + " " + ev.Test)
		if why := testLines(t.out, 2); len(why) > 0 {
			rp.res.why[ev.Package+" "+ev.Test] = why
		}
		delete(p.tests, ev.Test)
	case "pass", "skip":
		delete(p.tests, ev.Test)
	}
}

// end reports the end of a package: a failed one's tests that did not
// end (a panic, a timeout) and its own output, then its line.
func (rp *reporter) end(ev event) {
	p := rp.pkg(ev.Package)
	elapsed := time.Duration(ev.Elapsed * float64(time.Second))
	switch ev.Action {
	case "pass":
		fmt.Fprintf(rp.w, "ok  \t%s\t%.3fs\n", ev.Package, elapsed.Seconds())
	case "skip":
		fmt.Fprintf(rp.w, "?   \t%s\t[no test files]\n", ev.Package)
	case "fail":
		if ev.FailedBuild == "" && !p.failed && len(p.tests) == 0 {
			rp.fail(ev.Package) // outside its tests: TestMain, init
		}
		rp.flush(ev.Package, p)
		if ev.FailedBuild != "" {
			fmt.Fprintf(rp.w, "FAIL\t%s [build failed]\n", ev.Package)
		} else {
			fmt.Fprintf(rp.w, "FAIL\t%s\t%.3fs\n", ev.Package, elapsed.Seconds())
		}
		rp.res.ok = false
	}
	delete(rp.pkgs, ev.Package)
	rp.res.packages = append(rp.res.packages, pkgResult{pkg: ev.Package, action: ev.Action, elapsed: elapsed})
}

// flush prints the output of p's tests that did not end, and what p
// printed outside its tests but the go command's line for it (ok, FAIL),
// which the report prints itself.
func (rp *reporter) flush(name string, p *pkg) {
	for _, tn := range p.order {
		if p.tests[tn] != nil {
			rp.show(p, tn)
			rp.fail(name + " " + tn + " (did not end)")
		}
	}
	p.tests = map[string]*test{}
	for _, line := range strings.SplitAfter(string(p.out), "\n") {
		if strings.HasPrefix(line, "FAIL\t"+name) || strings.HasPrefix(line, "ok  \t"+name) {
			continue
		}
		fmt.Fprint(rp.w, line)
	}
	p.out = nil
}

// show prints what test name and its parents printed and have not shown
// yet, parents first.
func (rp *reporter) show(p *pkg, name string) {
	for i := range len(name) {
		if name[i] == '/' {
			rp.showOne(p.tests[name[:i]])
		}
	}
	rp.showOne(p.tests[name])
}

func (rp *reporter) showOne(t *test) {
	if t == nil {
		return
	}
	_, _ = rp.w.Write(t.out[t.shown:])
	t.shown = len(t.out)
}

func (rp *reporter) fail(what string) {
	rp.res.ok = false
	rp.res.failed = append(rp.res.failed, what)
}

func (rp *reporter) pkg(name string) *pkg {
	p := rp.pkgs[name]
	if p == nil {
		p = &pkg{tests: map[string]*test{}}
		rp.pkgs[name] = p
		rp.started = append(rp.started, name)
	}
	return p
}

// testLine is a line a test printed with t.Log, t.Error or t.Fatal from
// one of its _test.go files (not from a helper package's file).
var testLine = regexp.MustCompile(`^\s+[\w.-]+_test\.go:\d+: `)

// maxWhy bounds a line of the summary's reasons.
const maxWhy = 400

// testLines returns the last n lines of out that a test printed from its
// own _test.go files, trimmed and cut at maxWhy bytes.
func testLines(out []byte, n int) []string {
	var lines []string
	for _, line := range strings.Split(string(out), "\n") {
		if !testLine.MatchString(line) {
			continue
		}
		line = strings.TrimSpace(line)
		if len(line) > maxWhy {
			line = line[:maxWhy] + "…"
		}
		lines = append(lines, line)
	}
	return lines[max(0, len(lines)-n):]
}
