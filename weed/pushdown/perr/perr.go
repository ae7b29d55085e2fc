// Package perr classifies pushdown errors by what the caller did wrong (or
// what went wrong on our side), independent of the transport. The gRPC
// handlers map a Kind to a status code once, at the boundary.
package perr

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Kind classifies an error.
type Kind int

const (
	Internal           Kind = iota // a bug or an unexpected failure on our side
	InvalidArgument                // the request is malformed or does not bind
	NotFound                       // the table, snapshot or file does not exist
	PermissionDenied               // the caller may not see this, or forged it
	FailedPrecondition             // the file changed under the request, etc.
	ResourceExhausted              // the request exceeds a configured limit
	Unimplemented                  // not built (yet)
	Unavailable                    // a dependency (filer, volume server) is down
	Corrupt                        // stored bytes are malformed (Parquet, DV, ...)
	OutOfRange                     // a range or position past the end of what it names
)

func (k Kind) String() string {
	switch k {
	case InvalidArgument:
		return "invalid argument"
	case NotFound:
		return "not found"
	case PermissionDenied:
		return "permission denied"
	case FailedPrecondition:
		return "failed precondition"
	case ResourceExhausted:
		return "resource exhausted"
	case Unimplemented:
		return "unimplemented"
	case Unavailable:
		return "unavailable"
	case Corrupt:
		return "corrupt data"
	case OutOfRange:
		return "out of range"
	default:
		return "internal"
	}
}

// Error is an error with a Kind.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// New returns an error of kind k with a formatted message (%w allowed).
func New(k Kind, format string, args ...any) error {
	return &Error{Kind: k, Err: fmt.Errorf(format, args...)}
}

// Wrap gives err the kind k unless it already has one.
func Wrap(k Kind, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Kind: k, Err: err}
}

// KindOf returns the kind of err; context errors are Unavailable-like
// cancellations reported as Internal only when nothing else applies.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// IsContext reports whether err is a context cancellation or deadline.
func IsContext(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// MaxQuoted is how much of a client-supplied string an error message
// quotes.
const MaxQuoted = 64

// Quote quotes client input for an error message: at most MaxQuoted bytes
// of it, and its length when it is longer, so a message never echoes an
// unbounded string back; the quoted text is at most 2×MaxQuoted bytes
// (escapes of binary input take up to 4 bytes a byte: fewer of its bytes
// are quoted).
func Quote(s string) string {
	cut := min(len(s), MaxQuoted)
	for {
		for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		q := strconv.Quote(s[:cut])
		if len(q) <= 2*MaxQuoted+2 || cut == 0 {
			if cut == len(s) {
				return q
			}
			return fmt.Sprintf("%s… (%d bytes)", q, len(s))
		}
		cut = cut * 2 / 3
	}
}

// Truncate cuts s to at most n bytes (at a UTF-8 boundary), marking the
// cut with the length it had: for messages and registry reasons that must
// stay short.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}
