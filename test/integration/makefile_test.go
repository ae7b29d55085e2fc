package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// `make build` (and so `make run`) links bin/weed only when a Go source,
// go.mod, go.sum or the commit changed: the repository's Makefile, run in a
// copy holding a stand-in source tree, with a stand-in go that records
// each build.
func TestMakeBuildLinksOnlyWhenSomethingChanged(t *testing.T) {
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("Makefile", string(mk))
	write("go.mod", "module x\n")
	write("go.sum", "")
	write("weed/weed.go", "package main\n")
	write("weed/weed_test.go", "package main\n")
	log := filepath.Join(dir, "builds.log")
	// the stand-in go: records the call and writes the -o output
	write("fakego", "#!/bin/sh\necho \"$@\" >> "+log+"\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then touch \"$2\"; fi; shift; done\n")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "one")
	builds := func() int {
		t.Helper()
		cmd := exec.Command("make", "build", "GO="+filepath.Join(dir, "fakego"))
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make build: %v\n%s", err, out)
		}
		b, _ := os.ReadFile(log)
		return strings.Count(string(b), "\n")
	}
	if n := builds(); n != 1 {
		t.Fatalf("first make build: %d builds, want 1", n)
	}
	if n := builds(); n != 1 {
		t.Fatalf("make build with nothing changed built again (%d builds)", n)
	}
	write("weed/weed_test.go", "package main\n\n// a test changed\n")
	if n := builds(); n != 1 {
		t.Fatalf("a changed test file relinked bin/weed (%d builds)", n)
	}
	write("weed/weed.go", "package main\n\n// changed\n")
	if n := builds(); n != 2 {
		t.Fatalf("a changed source: %d builds, want 2", n)
	}
	git("commit", "-qam", "two")
	if n := builds(); n != 3 {
		t.Fatalf("a new commit (the version it reports): %d builds, want 3", n)
	}
	if n := builds(); n != 3 {
		t.Fatalf("nothing changed after the commit: %d builds, want 3", n)
	}
}
