package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The streams in testdata are recorded `go test -json` runs (Go 1.26) of
// a module whose packages pass, fail, do not build, panic, time out, exit
// in TestMain and have no tests; all.json is `go test -json ./...` of all
// of them. The report prints a line per package, the whole output of
// failing tests and their parents and whatever a failing package printed
// outside its tests, and nothing of passing tests.
func TestReport(t *testing.T) {
	const pass, fail = "example.com/fix/pass", "example.com/fix/fail"
	tests := []struct {
		name   string
		events string // a file of testdata, or the events themselves
		ok     bool
		want   []string // in this order
		not    []string
		failed []string
	}{
		{name: "pass", events: "pass.json", ok: true,
			want: []string{"ok  \t" + pass + "\t0.017s\n", "1 packages, 0s of package time; slowest:\n        0s  pass  " + pass},
			not:  []string{"a log line of a passing test", "subtest one", "=== RUN", "not here", "PASS"}},
		{name: "a subtest fails", events: "fail.json",
			want: []string{"=== RUN   TestParent\n", "parent's setup", "parent's stdout", "=== RUN   TestParent/bad\n",
				"about to fail", "got 1, want 2", "--- FAIL: TestParent/bad", "parent's end", "--- FAIL: TestParent (",
				"FAIL\t" + fail + "\t0.015s\n", "2 failed:\n  " + fail + " TestParent/bad\n      fail_test.go:15: about to fail\n      fail_test.go:16: got 1, want 2\n" +
					"  " + fail + " TestParent\n      fail_test.go:11: parent's setup\n      fail_test.go:18: parent's end\n"},
			not:    []string{"quiet", "good sibling", "TestParent/good", "TestOK"},
			failed: []string{fail + " TestParent/bad", fail + " TestParent"}},
		{name: "build failure", events: "build.json",
			want: []string{"# example.com/fix/build [example.com/fix/build.test]\n",
				`build/build.go:3:23: cannot use "not an int"`, "FAIL\texample.com/fix/build [build failed]\n"},
			failed: []string{"example.com/fix/build [example.com/fix/build.test] (build failed)"}},
		{name: "panic", events: "panic.json",
			want: []string{"before the panic", "--- FAIL: TestPanics", "panic: assignment to entry in nil map",
				"panic_test.go:10", "FAIL\texample.com/fix/panic\t0.019s\n"},
			not:    []string{"TestFine"},
			failed: []string{"example.com/fix/panic TestPanics"}},
		{name: "timeout", events: "timeout.json",
			want: []string{"=== RUN   TestHangs\n", "waiting", "panic: test timed out after 2s", "timeout_test.go:12",
				"FAIL\texample.com/fix/timeout\t2.023s\n"},
			not:    []string{"TestFast"},
			failed: []string{"example.com/fix/timeout TestHangs (did not end)"}},
		{name: "TestMain exits", events: "exit.json",
			want:   []string{"setup failed: no server\n", "FAIL\texample.com/fix/exit\t0.021s\n"},
			failed: []string{"example.com/fix/exit"}},
		{name: "no test files", events: "notests.json", ok: true,
			want: []string{"?   \texample.com/fix/notests\t[no test files]\n"}},
		{name: "all of them", events: "all.json",
			want: []string{"build failed]\n", "setup failed", "FAIL\texample.com/fix/exit", "[no test files]",
				"got 1, want 2", "FAIL\t" + fail, "ok  \t" + pass, "nil map", "FAIL\texample.com/fix/panic",
				"test timed out", "FAIL\texample.com/fix/timeout\t3.014s\n", "6 failed:\n",
				"7 packages, 3s of package time; slowest:\n        3s  fail  example.com/fix/timeout\n"},
			not: []string{"good sibling", "quiet", "a log line of a passing test", "TestFast", "TestFine"},
			failed: []string{"example.com/fix/build [example.com/fix/build.test] (build failed)", "example.com/fix/exit",
				fail + " TestParent/bad", fail + " TestParent", "example.com/fix/panic TestPanics",
				"example.com/fix/timeout TestHangs (did not end)"}},
		{name: "a stream cut short", events: `{"Action":"start","Package":"a"}
{"Action":"run","Package":"a","Test":"TestX"}
{"Action":"output","Package":"a","Test":"TestX","Output":"=== RUN   TestX\n"}
{"Action":"output","Package":"a","Output":"fatal error: out of memory\n"}
`,
			want:   []string{"=== RUN   TestX\n", "fatal error: out of memory\n", "testreport: package a did not report its end\n"},
			failed: []string{"a TestX (did not end)", "a"}},
		{name: "the go command's own output", events: "go: downloading example.com/x v1.0.0\n" + `{"Action":"start","Package":"a"}
{"Action":"pass","Package":"a","Elapsed":12.5}
`, ok: true,
			want: []string{"go: downloading example.com/x v1.0.0\n", "ok  \ta\t12.500s\n", "12.5s  pass  a\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := tt.events
			if strings.HasSuffix(events, ".json") {
				b, err := os.ReadFile(filepath.Join("testdata", events))
				if err != nil {
					t.Fatal(err)
				}
				events = string(b)
			}
			var out, sink bytes.Buffer
			rep := report(strings.NewReader(events), &out, &sink)
			summary(&out, rep, 15)
			got := out.String()
			if rep.ok != tt.ok {
				t.Errorf("ok = %v, want %v", rep.ok, tt.ok)
			}
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("output does not hold %q after what came before:\n%s", w, got)
					break
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("output holds %q:\n%s", n, got)
				}
			}
			if !reflect.DeepEqual(rep.failed, tt.failed) {
				t.Errorf("failed = %q, want %q", rep.failed, tt.failed)
			}
			if sink.String() != events {
				t.Errorf("events written differ from those read")
			}
		})
	}
}
