package metrics

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Latencies records durations since start in a fixed-size log-linear
// histogram (HDR-like: 8 buckets per power of two of microseconds, so a
// quantile is within 12.5% of the true value) and answers quantiles from
// it. Memory is the same after one sample or a billion; safe for
// concurrent use.
type Latencies struct {
	buckets [latencyBuckets]atomic.Int64
	count   atomic.Int64
}

const (
	subBits        = 3 // 8 sub-buckets per power of two
	maxExponent    = 40
	latencyBuckets = (maxExponent + 2) << subBits // up to 2^41 µs (25 days)
)

func bucketOf(us uint64) int {
	if us < 1<<(subBits+1) {
		return int(us)
	}
	e := bits.Len64(us) - (subBits + 1)
	i := (e << subBits) + int(us>>e)
	return min(i, latencyBuckets-1)
}

// upperOf is the largest value (µs) that falls in bucket i.
func upperOf(i int) uint64 {
	if i < 1<<(subBits+1) {
		return uint64(i)
	}
	e := i>>subBits - 1
	m := uint64(i - e<<subBits)
	return (m+1)<<e - 1
}

// Observe records one duration.
func (l *Latencies) Observe(d time.Duration) {
	l.buckets[bucketOf(uint64(max(0, d.Microseconds())))].Add(1)
	l.count.Add(1)
}

// Count is the number of durations recorded.
func (l *Latencies) Count() int64 { return l.count.Load() }

// Quantile returns the q-quantile (0 < q <= 1) of the recorded durations,
// rounded up to its bucket's bound; 0 when nothing was recorded.
func (l *Latencies) Quantile(q float64) time.Duration {
	n := l.count.Load()
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.5)
	rank = max(1, min(rank, n))
	var seen int64
	for i := range l.buckets {
		seen += l.buckets[i].Load()
		if seen >= rank {
			return time.Duration(upperOf(i)) * time.Microsecond
		}
	}
	return time.Duration(upperOf(latencyBuckets-1)) * time.Microsecond
}
