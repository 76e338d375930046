package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestBinaryFlags(t *testing.T) {
	for _, tt := range []struct {
		in, want []string
	}{
		{[]string{"-count=1", "-timeout=60m", "-ldflags=-s -w", "-short"}, []string{"-test.count=1", "-test.timeout=60m", "-test.short"}},
		{[]string{"-race", "--run=TestX", "-tags=e2e"}, []string{"-test.run=TestX", "-test.timeout=10m0s"}},
		{nil, []string{"-test.timeout=10m0s"}},
	} {
		if got := binaryFlags(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("binaryFlags(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestBinaryName(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/rukpak/rukpak/internal/format/helm": "helm.test",
		"github.com/rukpak/rukpak/api/v1alpha2":         "v1alpha2.test",
		"example.com/m/v2":                              "m.test",
		"m":                                             "m.test",
	} {
		if got := binaryName(in); got != want {
			t.Errorf("binaryName(%q) = %q, want %q", in, got, want)
		}
	}
}

// testrun on a module of its own: the events of a passing, a failing and
// a package without tests, and of two packages of one name, run in their
// directories; a second run links nothing again; a build failure runs
// nothing.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries: make test runs it, make test-unit does not")
	}
	mod := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("pass/pass_test.go", `package pass

import (
	"os"
	"testing"
)

func TestHere(t *testing.T) {
	if _, err := os.Stat("pass_test.go"); err != nil {
		t.Fatal("not run in its package's directory:", err)
	}
	if !testing.Short() {
		t.Fatal("-short not passed on")
	}
}
`)
	write("fail/fail_test.go", "package fail\n\nimport \"testing\"\n\nfunc TestFails(t *testing.T) { t.Fatal(\"boom\") }\n")
	write("none/none.go", "package none\n")
	// Two packages of one name: go test -c -o DIR/ cannot build both.
	write("other/pass/pass_test.go", "package pass\n\nimport \"testing\"\n\nfunc TestOther(t *testing.T) {}\n")
	t.Chdir(mod)
	bins := filepath.Join(t.TempDir(), "bin")

	ends := func(out []byte) map[string]string {
		t.Helper()
		got := map[string]string{}
		dec := json.NewDecoder(bytes.NewReader(out))
		for dec.More() {
			var ev struct{ Action, Package, Test, Output string }
			if err := dec.Decode(&ev); err != nil {
				t.Fatalf("%v in events:\n%s", err, out)
			}
			if ev.Test == "" && ev.Package != "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
				got[ev.Package] = ev.Action
			}
		}
		return got
	}
	want := map[string]string{"example.com/m/pass": "pass", "example.com/m/fail": "fail", "example.com/m/none": "skip", "example.com/m/other/pass": "pass"}
	var out bytes.Buffer
	if err := run(&out, io.Discard, bins, 2, []string{"-count=1", "-short", "-x"}, []string{"./..."}); err != nil {
		t.Fatal(err)
	}
	if got := ends(out.Bytes()); !reflect.DeepEqual(got, want) {
		t.Fatalf("packages ended %v, want %v:\n%s", got, want, out.String())
	}
	if !strings.Contains(out.String(), "boom") {
		t.Fatalf("the failing test's output is missing:\n%s", out.String())
	}

	// With -json, go test -c -x reports its commands as build output.
	if !strings.Contains(out.String(), "/link -o ") {
		t.Fatalf("the first run linked nothing:\n%s", out.String())
	}
	out.Reset()
	if err := run(&out, io.Discard, bins, 2, []string{"-count=1", "-short", "-x"}, []string{"./..."}); err != nil {
		t.Fatal(err)
	}
	if got := ends(out.Bytes()); !reflect.DeepEqual(got, want) {
		t.Fatalf("second run: packages ended %v, want %v", got, want)
	}
	if strings.Contains(out.String(), "/link -o ") {
		t.Fatalf("the second run linked again though nothing changed:\n%s", out.String())
	}

	write("pass/pass.go", "package pass\n\nfunc F() int { return \"x\" }\n")
	out.Reset()
	err := run(&out, io.Discard, bins, 2, []string{"-count=1", "-short"}, []string{"./..."})
	if err == nil || !strings.Contains(err.Error(), "no test was run") {
		t.Fatalf("run = %v, want the build's failure", err)
	}
	if !strings.Contains(out.String(), `"Action":"build-fail"`) || strings.Contains(out.String(), `"Action":"start"`) {
		t.Fatalf("events after a build failure:\n%s", out.String())
	}
}
