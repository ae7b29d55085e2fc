package plan

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// Verdict memo: what the footer tiers (zone maps, bloom filters and
// dictionaries, page index) decide for a file depends on the file and on
// the predicate's content and the tiers switched on, nothing else, once
// the few table-dependent and transient paths are set aside. A warm plan
// of a predicate seen before copies its row group plans from the file
// state instead of evaluating every row group again:
//
//	predicate + disabled tiers ──verdictKeyOf──▶ exact byte key
//	   ──verdictKeys.intern──▶ id (never reused; 0: not memoized)
//	fileState.verdicts ──(id, side page columns)──▶ row group plans + notes
//	(stored from the second plan of a predicate on)
//
// Not memoized (evaluated every time): a leaf of a field the file does
// not store (its verdict reads the table's defaults and partition specs),
// a bloom filter or page index that could not be read (the next plan
// retries it), a predicate whose key is too long.

// maxVerdictKeyBytes bounds a memoized predicate's key; longer ones (huge
// IN lists) are evaluated every time.
const maxVerdictKeyBytes = 16 << 10

// maxFileVerdicts is how many predicates' verdicts a file state keeps
// (the most recent).
const maxFileVerdicts = 4

// tierVerdicts are the footer tiers' output for one file and predicate,
// immutable once published.
type tierVerdicts struct {
	key  uint64 // verdictKeys id
	side int32  // the footer's SidePageColumns when evaluated
	// the row group plans: the first inline, the others in rest; shared by
	// every plan copying them (RowSets are replaced, never changed in place)
	first RowGroupAccess
	rest  []RowGroupAccess
	notes *verdictNotes
}

// verdictNotes are the notes the footer tiers took on a file, and their
// strings; files with the same notes share one (see fileContext.notesOf).
type verdictNotes struct {
	missing, used         noteSet
	missingStrs, usedStrs []string // no spare capacity: appending copies
}

// fileVerdicts are a file state's memoized verdicts: maxFileVerdicts
// slots in the state itself, replaced in turn, so a warm plan finds its
// own one object away from the state.
type fileVerdicts struct {
	slots [maxFileVerdicts]atomic.Pointer[tierVerdicts]
	turn  atomic.Uint32
}

// verdictsOf returns the memoized verdicts of key with side page columns
// side, or nil.
func (s *fileState) verdictsOf(key uint64, side int32) *tierVerdicts {
	if key == 0 {
		return nil
	}
	for i := range s.verdicts.slots {
		if v := s.verdicts.slots[i].Load(); v != nil && v.key == key && v.side == side {
			return v
		}
	}
	return nil
}

// storeVerdicts memoizes v in the next slot.
func (s *fileState) storeVerdicts(v *tierVerdicts) {
	s.verdicts.slots[(s.verdicts.turn.Add(1)-1)%maxFileVerdicts].Store(v)
}

// newTierVerdicts memoizes a file's row group plans and the worker's notes.
func (fc *fileContext) newTierVerdicts(key uint64, side int32, rgs []RowGroupAccess) *tierVerdicts {
	v := &tierVerdicts{key: key, side: side, notes: fc.notesOf()}
	if len(rgs) > 0 {
		v.first = rgs[0]
		v.rest = slices.Clone(rgs[1:])
	}
	return v
}

// memoizedVerdictsTier stands for the footer tiers when their answers
// for this predicate are memoized on the file state (fc.verdicts): it
// narrows the access to them (a fresh access: it takes them as they are).
type memoizedVerdictsTier struct{}

func (memoizedVerdictsTier) Narrow(_ context.Context, fc *fileContext, fa *FileAccess) error {
	v := fc.verdicts
	for rg := range fa.rowGroups {
		to := v.first
		if rg > 0 {
			to = v.rest[rg-1]
		}
		if err := fa.intersectRowGroup(rg, fc.footer.RowGroupRows(rg), to, TierPageIndex); err != nil {
			return err
		}
	}
	return nil
}

// addNotes adds the memoized notes to fp's.
func (v *tierVerdicts) addNotes(fp *FilePlan) {
	fp.Missing = appendNotes(fp.Missing, v.notes.missingStrs)
	fp.Used = appendNotes(fp.Used, v.notes.usedStrs)
}

func appendNotes(dst, notes []string) []string {
	if dst == nil {
		return notes
	}
	return append(dst, notes...)
}

// notesOf returns the worker's notes of the current file as verdictNotes,
// the previous file's when they are the same.
func (fc *fileContext) notesOf() *verdictNotes {
	if n := fc.lastNotes; n != nil && slices.Equal(n.missing, fc.missing) && slices.Equal(n.used, fc.used) {
		return n
	}
	n := &verdictNotes{missing: slices.Clone(fc.missing), used: slices.Clone(fc.used)}
	n.missingStrs = fc.noteStrings(nil, n.missing)
	n.usedStrs = fc.noteStrings(nil, n.used)
	fc.lastNotes = n
	return n
}

// verdictKeys interns predicate keys to ids. Ids are never reused: when
// the table is full it starts over, and verdicts memoized under a dropped
// id are simply never found again.
var verdictKeys struct {
	mu    sync.Mutex
	ids   map[string]uint64
	bytes int
	next  uint64
}

// maxVerdictKeysBytes bounds the interned keys' bytes.
const maxVerdictKeysBytes = 4 << 20

// internVerdictKey returns k's id, and whether an earlier plan interned
// it (repeat).
func internVerdictKey(k []byte) (id uint64, repeat bool) {
	verdictKeys.mu.Lock()
	defer verdictKeys.mu.Unlock()
	if id, ok := verdictKeys.ids[string(k)]; ok {
		return id, true
	}
	if verdictKeys.ids == nil || verdictKeys.bytes+len(k) > maxVerdictKeysBytes {
		verdictKeys.ids, verdictKeys.bytes = map[string]uint64{}, 0
	}
	verdictKeys.next++
	verdictKeys.ids[string(k)] = verdictKeys.next
	verdictKeys.bytes += len(k)
	return verdictKeys.next, false
}

// verdictKeyOf is the id of what the footer tiers' verdicts depend on
// besides the file: the predicate, every leaf's field, name (notes carry
// it), type, operator and literals, and which footer tiers are off (0: not
// memoized); repeat says an earlier plan had the same (verdicts are stored
// from a predicate's second plan on: point lookups of a new value each
// plan store nothing).
func verdictKeyOf(e predicate.Expr, o Options) (id uint64, repeat bool) {
	var flags byte
	for i, t := range []string{TierFooter, TierBloom, TierPageIndex} {
		if o.Disable[t] {
			flags |= 1 << i
		}
	}
	k, ok := appendExprKey([]byte{flags}, e)
	if !ok || len(k) > maxVerdictKeyBytes {
		return 0, false
	}
	return internVerdictKey(k)
}

// appendExprKey appends an exact, unambiguous encoding of e (ok false: e
// holds something it does not know).
func appendExprKey(b []byte, e predicate.Expr) ([]byte, bool) {
	kids := func(tag byte, ks []predicate.Expr) ([]byte, bool) {
		b = binary.AppendUvarint(append(b, tag), uint64(len(ks)))
		for _, k := range ks {
			var ok bool
			if b, ok = appendExprKey(b, k); !ok {
				return nil, false
			}
		}
		return b, true
	}
	switch x := e.(type) {
	case predicate.Const:
		if x.Value {
			return append(b, 'T'), true
		}
		return append(b, 'F'), true
	case predicate.And:
		return kids('A', x.Kids)
	case predicate.Or:
		return kids('O', x.Kids)
	case predicate.Not:
		return kids('N', []predicate.Expr{x.Kid})
	case predicate.Residual:
		return appendKeyString(append(b, 'R'), x.Reason), true
	case *predicate.Leaf:
		if x.Type == nil || len(x.Raw) > 0 && len(x.Lits) == 0 {
			return nil, false // not bound
		}
		b = append(b, 'L')
		b = binary.AppendVarint(b, int64(x.FieldID))
		b = appendKeyString(b, x.Name)
		b = appendKeyString(b, x.Type.String())
		b = append(b, byte(x.Op))
		if x.Negated {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.AppendUvarint(b, uint64(len(x.Lits)))
		for _, v := range x.Lits {
			b = appendValueKey(b, v)
		}
		return b, true
	}
	return nil, false
}

func appendKeyString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendValueKey appends every field of v.
func appendValueKey(b []byte, v value.Value) []byte {
	b = append(b, byte(v.K))
	b = binary.AppendVarint(b, v.I)
	b = binary.AppendUvarint(b, v.U)
	b = binary.AppendUvarint(b, math.Float64bits(v.F))
	if v.B == nil {
		b = append(b, 0)
	} else {
		b = appendKeyString(append(b, 1), string(v.B))
	}
	switch {
	case v.D == nil:
		b = append(b, 0)
	case v.D.Sign() < 0:
		b = appendKeyString(append(b, 1), string(v.D.Bytes()))
	default:
		b = appendKeyString(append(b, 2), string(v.D.Bytes()))
	}
	b = binary.AppendVarint(b, int64(v.Scale))
	if v.L == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(append(b, 1), uint64(len(v.L)))
	for _, e := range v.L {
		b = appendValueKey(b, e)
	}
	return b
}
