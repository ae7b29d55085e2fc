// Package netport picks a TCP port for a listener some other code binds
// later, from below the kernel's ephemeral floor.
//
//	Free(host, headroom, skip)
//	  │ try random p in [Low, floor-headroom)      (floor: ip_local_port_range, default 32768)
//	  │   skip(p)? ─▶ next      listen(host:p) fails? ─▶ next
//	  ▼ close, return p        no such range? ─▶ the kernel's choice (:0), Below=false
//
// A port found free and then released is only safe until someone else binds
// it. The kernel gives outbound connections local ports at or above the
// ephemeral floor, so a port chosen there (the kernel's own ":0" choice) can
// be taken by any dial of any process — the process about to bind it
// included — in that window; a port below the floor can only be taken by
// another explicit bind. Upstream's `weed mini` warns about the same thing for
// its admin port.
package netport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Low is the lowest port Free picks.
const Low = 10000

// DefaultEphemeralFloor is Linux's default first ephemeral port, used where
// the kernel's range cannot be read.
const DefaultEphemeralFloor = 32768

// rangeFile is where Linux publishes its ephemeral port range.
var rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// EphemeralFloor returns the first port the kernel hands to outbound
// connections.
func EphemeralFloor() int {
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return DefaultEphemeralFloor
	}
	return parseFloor(string(b))
}

func parseFloor(s string) int {
	f := strings.Fields(s)
	if len(f) < 1 {
		return DefaultEphemeralFloor
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 0 || n > 65535 {
		return DefaultEphemeralFloor
	}
	return n
}

// minSpan is the fewest candidate ports Free accepts below the floor before
// it falls back to the kernel's choice.
const minSpan = 1000

// tries bounds the random probes below the floor.
const tries = 200

// Free returns a port nothing listens on at host, released again before it
// returns. It prefers [Low, floor-headroom) so that p+headroom is below the
// floor too (headroom 0 for a single port); skip rejects ports the caller
// has handed out already. Below reports whether the port came from that
// range: false means the kernel chose it (the range is smaller than 1000
// ports, or every probe was taken), and an outbound connection may claim it
// before it is bound.
func Free(host string, headroom int, skip func(int) bool) (port int, below bool, err error) {
	hi := EphemeralFloor() - headroom
	if hi-Low >= minSpan {
		for i := 0; i < tries; i++ {
			p := Low + rand.IntN(hi-Low)
			if skip != nil && skip(p) {
				continue
			}
			if Listenable(host, p) {
				return p, true, nil
			}
		}
	}
	for i := 0; i < tries; i++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, false, fmt.Errorf("no free port on %s: %w", host, err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if p+headroom <= 65535 && (skip == nil || !skip(p)) {
			return p, false, nil
		}
	}
	return 0, false, fmt.Errorf("no free port on %s after %d tries", host, 2*tries)
}

// Listenable reports whether host:p can be listened on now.
func Listenable(host string, p int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
