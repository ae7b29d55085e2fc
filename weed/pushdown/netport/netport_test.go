package netport

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func withRange(t *testing.T, content string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "range")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	old := rangeFile
	rangeFile = p
	t.Cleanup(func() { rangeFile = old })
}

func TestEphemeralFloorReadsTheKernelsRangeAndDefaultsWhenUnreadable(t *testing.T) {
	withRange(t, "40000\t60999\n")
	if got := EphemeralFloor(); got != 40000 {
		t.Fatalf("floor = %d, want 40000", got)
	}
	for _, bad := range []string{"", "x 60999", "-1 2", "70000 80000"} {
		withRange(t, bad)
		if got := EphemeralFloor(); got != DefaultEphemeralFloor {
			t.Fatalf("floor of %q = %d, want the default %d", bad, got, DefaultEphemeralFloor)
		}
	}
	rangeFile = filepath.Join(t.TempDir(), "absent")
	if got := EphemeralFloor(); got != DefaultEphemeralFloor {
		t.Fatalf("floor without the file = %d, want %d", got, DefaultEphemeralFloor)
	}
}

func TestFreePicksAListenablePortBelowTheFloorLeavingHeadroom(t *testing.T) {
	withRange(t, "32768 60999")
	for i := 0; i < 50; i++ {
		p, below, err := Free("127.0.0.1", 10000, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !below || p < Low || p+10000 >= 32768 {
			t.Fatalf("port %d (below=%v): want [%d, %d)", p, below, Low, 32768-10000)
		}
		if !Listenable("127.0.0.1", p) {
			t.Fatalf("port %d was returned still bound", p)
		}
	}
}

func TestFreeSkipsPortsTheCallerHandedOutAndPortsInUse(t *testing.T) {
	withRange(t, "12000 60999") // candidates [10000, 12000)
	ln, err := net.Listen("tcp", "127.0.0.1:11000")
	if err != nil {
		t.Skipf("port 11000 busy here: %v", err)
	}
	defer ln.Close()
	seen := map[int]bool{}
	for i := 0; i < 300; i++ {
		p, below, err := Free("127.0.0.1", 0, func(p int) bool { return p%2 == 1 })
		if err != nil {
			t.Fatal(err)
		}
		if !below {
			continue
		}
		if p%2 == 1 || p == 11000 {
			t.Fatalf("port %d returned: skipped or in use", p)
		}
		seen[p] = true
	}
	if len(seen) < 100 {
		t.Fatalf("only %d distinct ports in 300 picks: not random", len(seen))
	}
}

func TestFreeFallsBackToTheKernelsChoiceWhenNoRangeIsBelowTheFloor(t *testing.T) {
	withRange(t, "10500 60999") // 500 ports below the floor: fewer than minSpan
	p, below, err := Free("127.0.0.1", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if below {
		t.Fatalf("port %d reported below the floor though no range was usable", p)
	}
	if !Listenable("127.0.0.1", p) {
		t.Fatalf("port %s not free", strconv.Itoa(p))
	}
}
