// Package safe runs the goroutines a request starts so that a panic in one
// of them fails that request instead of killing the process: gRPC's
// recovery covers only the handler's own goroutine, and a panic anywhere
// else ends master, filer, volume, S3 and catalog together.
//
//	handler ─▶ safe.Group(ctx) ─▶ g.Go(fn) … g.Go(fn)
//	                                 │ panic in fn
//	                                 ▼
//	             recovered, logged with its stack, returned by g.Wait() as
//	             an Internal error (INTERNAL at the handler boundary);
//	             the group's context is cancelled, the other goroutines stop
//
// Background goroutines (maintenance loops, watchers) use safe.Go: a panic
// is logged with its stack and the goroutine ends; the process lives on.
package safe

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"golang.org/x/sync/errgroup"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Panicked wraps the value a goroutine panicked with.
type Panicked struct {
	Value any
	Stack []byte
}

func (p *Panicked) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Recovered turns a panic value into an Internal error, logging its stack.
// Call as `defer func() { if r := recover(); r != nil { err = safe.Recovered(what, r) } }()`.
func Recovered(what string, r any) error {
	stack := debug.Stack()
	glog.Errorf("pushdown: panic in %s: %v\n%s", what, r, stack)
	return perr.Wrap(perr.Internal, fmt.Errorf("internal error in %s: %w", what, &Panicked{Value: r, Stack: stack}))
}

// Call runs fn, returning a panic in it as an Internal error.
func Call(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = Recovered(what, r)
		}
	}()
	return fn()
}

// Go runs fn on a goroutine of its own; a panic in it is logged and ends
// only that goroutine.
func Go(what string, fn func()) {
	go func() {
		_ = Call(what, func() error { fn(); return nil })
	}()
}

// ErrGroup is an errgroup.Group whose goroutines cannot take the process
// down: a panic in one is that goroutine's error.
type ErrGroup struct {
	g    *errgroup.Group
	what string
}

// Group returns a group whose context is cancelled when a goroutine fails
// (or panics) or when Wait returns, as errgroup.WithContext does. what
// names the work in logs.
func Group(ctx context.Context, what string) (*ErrGroup, context.Context) {
	g, gctx := errgroup.WithContext(ctx)
	return &ErrGroup{g: g, what: what}, gctx
}

// SetLimit bounds the goroutines active at once (errgroup's SetLimit).
func (g *ErrGroup) SetLimit(n int) { g.g.SetLimit(n) }

// Go runs fn in the group, blocking while the limit is reached.
func (g *ErrGroup) Go(fn func() error) {
	g.g.Go(func() error { return Call(g.what, fn) })
}

// TryGo runs fn in the group only if the limit allows it now.
func (g *ErrGroup) TryGo(fn func() error) bool {
	return g.g.TryGo(func() error { return Call(g.what, fn) })
}

// Wait waits for every goroutine and returns the first error (a panic
// counts as one).
func (g *ErrGroup) Wait() error { return g.g.Wait() }

// Panics carries a panic of a worker goroutine back to the goroutine that
// waits for the workers (parallel loops without errors to return): each
// worker defers Catch, the waiter calls Rethrow after the workers are done,
// where the handler's own recovery sees it.
type Panics struct {
	first atomic.Pointer[Panicked]
}

// Catch recovers a panic of the worker it is deferred in (it must be
// deferred directly: `defer p.Catch()`).
func (p *Panics) Catch() {
	if r := recover(); r != nil {
		p.first.CompareAndSwap(nil, &Panicked{Value: r, Stack: debug.Stack()})
	}
}

// Rethrow panics in the calling goroutine with the first panic caught.
func (p *Panics) Rethrow() {
	if v := p.first.Load(); v != nil {
		panic(v)
	}
}

// Value wraps fn (a singleflight function, say) so that a panic in it is
// returned as an Internal error instead.
func Value[T any](what string, fn func() (T, error)) func() (T, error) {
	return func() (v T, err error) {
		defer func() {
			if r := recover(); r != nil {
				var zero T
				v, err = zero, Recovered(what, r)
			}
		}()
		return fn()
	}
}
