package main

import (
	"bytes"
	"strings"
	"testing"
)

// The report passes the output through, lists packages slowest first, and
// fails on a failed package, a failed test, and a package that never
// ended (a crash).
func TestReport(t *testing.T) {
	tests := []struct {
		name   string
		events string
		ok     bool
		want   []string
	}{
		{"two packages pass", `{"Action":"start","Package":"a"}
{"Action":"output","Package":"a","Output":"ok  \ta\t1.0s\n"}
{"Action":"pass","Package":"a","Elapsed":1.0}
{"Action":"start","Package":"b"}
{"Action":"pass","Package":"b","Elapsed":12.5}
`, true, []string{"ok  \ta\t1.0s", "2 packages, 14s of package time", "12.5s  pass  b\n        1s  pass  a"}},
		{"a test fails", `{"Action":"start","Package":"a"}
{"Action":"fail","Package":"a","Test":"TestX","Elapsed":0.1}
{"Action":"fail","Package":"a","Elapsed":0.2}
`, false, []string{"fail  a"}},
		{"a package never ends", `{"Action":"start","Package":"a"}
{"Action":"output","Package":"a","Output":"panic: boom\n"}
`, false, []string{"panic: boom", "package a did not report its end"}},
		{"a build error", "# a\n./a.go:1: syntax error\n", true, []string{"./a.go:1: syntax error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, sink bytes.Buffer
			results, ok := report(strings.NewReader(tt.events), &out, &sink)
			summary(&out, results, 5)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v\n%s", ok, tt.ok, out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Fatalf("output does not hold %q:\n%s", w, out.String())
				}
			}
			if sink.String() != tt.events && !strings.HasPrefix(tt.events, "#") {
				t.Fatalf("events written: %q, want them as read", sink.String())
			}
		})
	}
}
