package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pushdown/netport"
)

func exitedProcess(t *testing.T, log string) *Process {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mini.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Process{Name: "mini", Log: path, done: make(chan struct{}), err: errors.New("exit status 255")}
	close(p.done)
	return p
}

func TestUntilExitEndsTheWaitAsSoonAsTheProcessExits(t *testing.T) {
	p := &Process{Name: "mini", done: make(chan struct{})}
	ctx, cancel := UntilExit(context.Background(), time.Hour, p)
	defer cancel()
	select {
	case <-ctx.Done():
		t.Fatal("context ended while the process runs")
	case <-time.After(20 * time.Millisecond):
	}
	p.err = errors.New("exit status 255")
	close(p.done)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("context still open after the process exited")
	}
	if c := context.Cause(ctx); c == nil || !strings.Contains(c.Error(), "mini exited: exit status 255") {
		t.Fatalf("cause = %v, want the exit named", c)
	}
}

func TestUntilExitEndsWhenAnyOfSeveralProcessesExits(t *testing.T) {
	a := &Process{Name: "master", done: make(chan struct{})}
	b := &Process{Name: "volume1", done: make(chan struct{})}
	ctx, cancel := UntilExit(context.Background(), time.Hour, a, b)
	defer cancel()
	b.err = errors.New("exit status 1")
	close(b.done)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("context still open after one of the processes exited")
	}
	if c := context.Cause(ctx); c == nil || !strings.Contains(c.Error(), "volume1 exited") {
		t.Fatalf("cause = %v, want volume1's exit named", c)
	}
	waited := errors.New("waiting for 3 healthy volume endpoints")
	if err := withExitCause(ctx, waited); !errors.Is(err, waited) || !strings.Contains(err.Error(), "volume1 exited: exit status 1") {
		t.Fatalf("the wait's error %v: want it kept, naming volume1's exit", err)
	}
	timedOut, cancelTimeout := UntilExit(context.Background(), time.Millisecond, &Process{Name: "filer", done: make(chan struct{})})
	defer cancelTimeout()
	<-timedOut.Done()
	if err := withExitCause(timedOut, waited); err != waited {
		t.Fatalf("a wait that ran out its time: %v, want the error unchanged", err)
	}
}

func TestOnlyABindFailureCountsAsALostPortRace(t *testing.T) {
	lost := exitedProcess(t, "F1205 s3.go:488 S3 API Server listener on 127.0.0.1:38509 error: listen tcp 127.0.0.1:38509: bind: address already in use\n")
	if !lostPortRace(lost) {
		t.Fatal("a bind failure is a lost port race")
	}
	other := exitedProcess(t, "F1205 filer.go:1 cannot open store\n")
	if lostPortRace(other) {
		t.Fatal("another fatal error must not be retried")
	}
	running := &Process{Name: "mini", Log: lost.Log, done: make(chan struct{})}
	if lostPortRace(running) {
		t.Fatal("a running process lost no race")
	}
}

func TestHandedOutPortsAreDistinctAndBelowTheEphemeralFloor(t *testing.T) {
	ports := FreePorts(t, 40)
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	g := FreePortWithGrpc(t)
	if seen[g] || seen[g+10000] {
		t.Fatalf("gRPC pair %d/%d overlaps ports handed out", g, g+10000)
	}
	floor := netport.EphemeralFloor()
	if floor-netport.Low < 11000 {
		t.Skipf("ephemeral floor %d leaves no range below it; ports come from the kernel", floor)
	}
	for _, p := range append(ports, g, g+10000) {
		if p < netport.Low || p >= floor {
			t.Fatalf("port %d outside [%d, %d): an outbound connection may claim it", p, netport.Low, floor)
		}
	}
}
