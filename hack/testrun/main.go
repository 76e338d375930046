// Command testrun runs the tests of packages as `go test -json` does, but
// keeps their test binaries in a directory between runs. go test links
// every package's test binary again at every run (the build cache keeps
// compiled packages, not linked test binaries), and for rukpak's fast tier
// linking is most of the work: each binary holds client-go, Helm and
// kustomize. `go test -c -o DIR/` links only the binaries whose inputs
// changed; testrun then runs each in its package's directory through
// test2json, at most -p at once, and writes each package's events to
// standard output when it ends, for hack/testreport.
//
//	testrun -dir .local/test/unit [-p 2] -- [go test flags] packages
//
// The go test flags are given to `go test -c`; those that are the test
// binary's (`go help testflag`: -run, -count, -short, -timeout, ...) also
// to each binary, as -test.X. Give them as -flag=value. When the build
// fails, its errors are reported (as go test -json does) and no test runs:
// a binary of the directory may then be out of date.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
)

// testFlags are the flags of `go help testflag` that go test passes on to
// the test binary.
var testFlags = map[string]bool{
	"bench": true, "benchmem": true, "benchtime": true, "blockprofile": true, "blockprofilerate": true,
	"count": true, "coverprofile": true, "cpu": true, "cpuprofile": true, "failfast": true, "fullpath": true,
	"fuzz": true, "fuzzminimizetime": true, "fuzztime": true, "list": true, "memprofile": true,
	"memprofilerate": true, "mutexprofile": true, "mutexprofilefraction": true, "outputdir": true,
	"parallel": true, "run": true, "short": true, "shuffle": true, "skip": true, "timeout": true,
	"trace": true, "v": true, "artifacts": true,
}

// pkg is a package to test, as go list -json describes it.
type pkg struct {
	ImportPath, Dir           string
	TestGoFiles, XTestGoFiles []string
}

// tests reports whether p has test files.
func (p pkg) tests() bool { return len(p.TestGoFiles)+len(p.XTestGoFiles) > 0 }

func main() {
	dir := flag.String("dir", "", "the directory that keeps the test binaries (required)")
	par := flag.Int("p", runtime.GOMAXPROCS(0), "how many test binaries run at once")
	flag.Parse()
	goFlags, patterns := splitArgs(flag.Args())
	if *dir == "" || len(patterns) == 0 {
		fmt.Fprintln(os.Stderr, "usage: testrun -dir DIR [-p N] -- [go test flags] packages")
		os.Exit(2)
	}
	if err := run(os.Stdout, os.Stderr, *dir, *par, goFlags, patterns); err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		os.Exit(1)
	}
}

// run builds the test binaries of the packages patterns match into dir
// and runs them, par at once, writing the events to w and what the go
// command prints besides to errw.
func run(w, errw io.Writer, dir string, par int, goFlags, patterns []string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	pkgs, err := list(patterns)
	if err != nil {
		return err
	}
	// go test -c -o DIR/ names each binary after its package's last
	// element, and refuses two packages of one name (internal/format and
	// pkg/format): the second of a name is built into DIR/1, the third
	// into DIR/2, and so on, one go test -c for each.
	var builds [][]string
	binDir := map[string]string{}
	seen := map[string]int{}
	for _, p := range pkgs {
		if !p.tests() {
			continue
		}
		n := seen[binaryName(p.ImportPath)]
		seen[binaryName(p.ImportPath)]++
		if n == len(builds) {
			builds = append(builds, nil)
		}
		builds[n] = append(builds[n], p.ImportPath)
		binDir[p.ImportPath] = dir
		if n > 0 {
			binDir[p.ImportPath] = filepath.Join(dir, fmt.Sprint(n))
		}
	}
	for n, tested := range builds {
		out := dir
		if n > 0 {
			out = filepath.Join(dir, fmt.Sprint(n))
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		build := exec.Command("go", append(append([]string{"test", "-c", "-json", "-o", out + "/"}, goFlags...), tested...)...)
		build.Stdout, build.Stderr = w, errw
		if err := build.Run(); err != nil {
			return fmt.Errorf("go test -c: %w; no test was run", err)
		}
	}
	t2j, err := exec.Command("go", "tool", "-n", "test2json").Output()
	if err != nil {
		return fmt.Errorf("go tool -n test2json: %w", err)
	}
	args := binaryFlags(goFlags)
	var (
		mu  sync.Mutex // one package's events at a time on w
		wg  sync.WaitGroup
		sem = make(chan struct{}, max(par, 1))
	)
	for _, p := range pkgs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var out []byte
			if p.tests() {
				out = runTests(strings.TrimSpace(string(t2j)), filepath.Join(binDir[p.ImportPath], binaryName(p.ImportPath)), p, args)
			} else {
				out = noTests(p.ImportPath)
			}
			mu.Lock()
			defer mu.Unlock()
			_, _ = w.Write(out)
		})
	}
	wg.Wait()
	return nil
}

// list returns the packages that patterns match.
func list(patterns []string) ([]pkg, error) {
	out, err := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles"}, patterns...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// runTests runs the test binary bin of p through test2json, in p's
// directory as go test does, and returns the events.
func runTests(t2j, bin string, p pkg, args []string) []byte {
	cmd := exec.Command(t2j, append([]string{"-t", "-p", p.ImportPath, bin, "-test.v=test2json", "-test.paniconexit0"}, args...)...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), "PWD="+p.Dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // a failed test is in the events; a binary that could not run, in their missing end
	return out.Bytes()
}

// noTests returns the events of go test -json for a package without
// test files.
func noTests(path string) []byte {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	now := time.Now()
	for _, ev := range []map[string]any{
		{"Time": now, "Action": "start", "Package": path},
		{"Time": now, "Action": "output", "Package": path, "Output": "?   \t" + path + "\t[no test files]\n"},
		{"Time": now, "Action": "skip", "Package": path, "Elapsed": 0},
	} {
		_ = enc.Encode(ev)
	}
	return out.Bytes()
}

// splitArgs splits go test's arguments into its flags and the packages.
func splitArgs(args []string) (flags, patterns []string) {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			return args[:i], args[i:]
		}
	}
	return args, nil
}

// binaryFlags returns the test binary's flags among go test's flags, as
// -test.X, with go test's default timeout when none is given.
func binaryFlags(goFlags []string) []string {
	var out []string
	timeout := false
	for _, f := range goFlags {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if testFlags[name] {
			out = append(out, "-test."+strings.TrimLeft(f, "-"))
			timeout = timeout || name == "timeout"
		}
	}
	if !timeout {
		out = append(out, "-test.timeout=10m0s")
	}
	return out
}

var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

// binaryName is the name `go test -c -o DIR/` gives the test binary of
// the package path: its last element (the one before for a major version
// such as v2) and .test.
func binaryName(path string) string {
	elems := strings.Split(path, "/")
	name := elems[len(elems)-1]
	if majorVersion.MatchString(name) && len(elems) > 1 {
		name = elems[len(elems)-2]
	}
	return name + ".test"
}
