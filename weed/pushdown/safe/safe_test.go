package safe

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

func TestAPanicInAGroupGoroutineIsThatGroupsInternalError(t *testing.T) {
	g, gctx := Group(context.Background(), "test work")
	var stopped atomic.Bool
	g.Go(func() error {
		<-gctx.Done()
		stopped.Store(true)
		return gctx.Err()
	})
	g.Go(func() error {
		var b []byte
		_ = b[7] // index out of range
		return nil
	})
	err := g.Wait()
	var p *Panicked
	if !errors.As(err, &p) || perr.KindOf(err) != perr.Internal {
		t.Fatalf("Wait: %v, want an Internal error wrapping the panic", err)
	}
	if !stopped.Load() {
		t.Fatal("the other goroutine was not cancelled by the panic")
	}
}

func TestAPanicInABackgroundGoroutineEndsOnlyThatGoroutine(t *testing.T) {
	done := make(chan struct{})
	Go("test background", func() {
		defer close(done)
		panic("boom")
	})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the goroutine never ran")
	}
}

func TestCallReturnsTheFunctionsOwnError(t *testing.T) {
	want := errors.New("plain")
	if err := Call("x", func() error { return want }); err != want {
		t.Fatalf("Call: %v", err)
	}
}

func TestAWorkersPanicIsRethrownInTheWaitingGoroutine(t *testing.T) {
	var p Panics
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer p.Catch()
		panic("worker")
	}()
	<-done
	defer func() {
		r := recover()
		if pv, ok := r.(*Panicked); !ok || pv.Value != "worker" {
			t.Fatalf("recovered %v, want the worker's panic", r)
		}
	}()
	p.Rethrow()
	t.Fatal("Rethrow returned")
}
