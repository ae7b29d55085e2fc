package server

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
)

// ServiceLimits bound what a pushdown service holds and spends at once.
type ServiceLimits struct {
	// MaxInflightBytes bounds the bytes of requests being read or served
	// at once (-pushdown.maxInflightMB; 0 = DefaultMaxInflightBytes).
	MaxInflightBytes int64
	// RequestTimeout is every call's deadline but BuildIndexes'
	// (-pushdown.requestTimeout; 0 = DefaultRequestTimeout, <0 = none).
	RequestTimeout time.Duration
}

// Defaults of ServiceLimits.
const (
	DefaultMaxInflightBytes = 256 << 20
	DefaultRequestTimeout   = 2 * time.Minute
)

// admission is how the service admits calls: callers refused from their
// metadata before a body is read, requests in flight bounded, deadlines.
func (l ServiceLimits) admission(service string, guard *access.Guard, maxRequest int) *grpcutil.Admission {
	inflight := l.MaxInflightBytes
	if inflight <= 0 {
		inflight = DefaultMaxInflightBytes
	}
	timeout := l.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	a := &grpcutil.Admission{Service: service, MaxRequest: maxRequest, MaxInflight: max(inflight, int64(maxRequest)),
		Timeout: func(method string) time.Duration {
			if method == "BuildIndexes" || timeout < 0 {
				return 0 // a build of a whole table (wait) takes its time
			}
			return timeout
		}}
	if guard != nil {
		a.Authenticate = guard.Admit
	}
	grpcutil.ReturnMemoryAfterBursts(context.Background(), 128<<20, 5*time.Second)
	return a
}

// SetMemoryLimit sets the process's soft memory limit
// (-pushdown.memoryLimitMB; 0 leaves GOMEMLIMIT or none): the collector
// works harder as the heap nears it and returns freed memory sooner.
func SetMemoryLimit(mb int) {
	if mb <= 0 {
		return
	}
	prev := debug.SetMemoryLimit(int64(mb) << 20)
	glog.V(0).Infof("pushdown: soft memory limit of the process %d MiB (was %d MiB)", mb, prev>>20)
}
