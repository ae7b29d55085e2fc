package deletes

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"sort"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// Applicability follows iceberg-go v0.7.0's planner (table/scanner.go,
// positional_delete_index.go, equality_delete_index.go), which mirrors
// Java's DeleteFileIndex:
//
//   - a deletion vector applies to the data file its ReferencedDataFile names
//     when d.DataSeq <= dv.DataSeq (or the DV's sequence number is unset);
//     spec and partition are not compared (the path is the scope);
//   - a position delete file with a ReferencedDataFile applies to that data
//     file alone when d.DataSeq <= del.DataSeq; spec and partition are not
//     compared either;
//   - any other position delete file applies when d.DataSeq <= del.DataSeq
//     and (spec id, partition tuple) are equal;
//   - when a DV applies to a data file, position delete files do not (the DV
//     already holds their positions; Index.For and Computer.Deleted drop
//     them);
//   - an equality delete file applies when d.DataSeq < del.DataSeq strictly
//     and either its spec is unpartitioned (a "global" delete: it applies to
//     data files of every spec and partition) or (spec id, partition tuple)
//     are equal and the data file's partition tuple is not empty.
//
// Partition tuples compare by canonical value: every integer-backed Go
// representation (int, int32, int64, Date, Time, Timestamp, TimestampNano)
// is one class, []byte and uuid.UUID are one class, decimals by value,
// floats by bits with NaN canonical and -0.0 distinct from 0.0, like
// iceberg-go's canonicalPartitionKey.

// Applies reports whether delete file del applies to data file d. specs
// tells an unpartitioned spec; a spec missing from specs counts as
// unpartitioned exactly when del's partition tuple is empty.
func Applies(del File, d DataFile, specs map[int]iceberg.PartitionSpec) bool {
	switch del.Content {
	case PositionDeletes:
		if del.IsDV() || del.ReferencedDataFile != "" {
			if del.ReferencedDataFile != d.Path {
				return false
			}
			if del.IsDV() && del.DataSeq < 0 {
				return true
			}
			return d.DataSeq <= del.DataSeq
		}
		return d.DataSeq <= del.DataSeq && partitionKey(del.SpecID, del.Partition) == partitionKey(d.SpecID, d.Partition)
	case EqualityDeletes:
		if del.DataSeq <= d.DataSeq {
			return false
		}
		if isUnpartitioned(del, specs) {
			return true
		}
		return len(d.Partition) > 0 && partitionKey(del.SpecID, del.Partition) == partitionKey(d.SpecID, d.Partition)
	}
	return false
}

func isUnpartitioned(del File, specs map[int]iceberg.PartitionSpec) bool {
	if spec, ok := specs[int(del.SpecID)]; ok {
		return spec.IsUnpartitioned()
	}
	return len(del.Partition) == 0
}

// Index assigns delete files to data files: deletion vectors and
// single-target position deletes by referenced path, the others by
// (spec, partition) key, each bucket sorted by data sequence number so a
// lookup is a binary search plus the matches.
type Index struct {
	dvByPath    map[string][]File
	posByPath   map[string][]File
	posByKey    map[string][]File
	eqGlobal    []File
	eqByKey     map[string][]File
	unknownSpec []int32 // equality delete spec ids missing from specs
}

// NewIndex indexes dels. Files of other contents are ignored.
func NewIndex(dels []File, specs map[int]iceberg.PartitionSpec) *Index {
	ix := &Index{dvByPath: map[string][]File{}, posByPath: map[string][]File{}, posByKey: map[string][]File{}, eqByKey: map[string][]File{}}
	unknown := map[int32]bool{}
	for _, f := range dels {
		switch f.Content {
		case PositionDeletes:
			switch {
			case f.IsDV():
				if f.ReferencedDataFile != "" { // iceberg-go's buildDVIndex skips DVs without one
					ix.dvByPath[f.ReferencedDataFile] = append(ix.dvByPath[f.ReferencedDataFile], f)
				}
			case f.ReferencedDataFile != "":
				ix.posByPath[f.ReferencedDataFile] = append(ix.posByPath[f.ReferencedDataFile], f)
			default:
				k := partitionKey(f.SpecID, f.Partition)
				ix.posByKey[k] = append(ix.posByKey[k], f)
			}
		case EqualityDeletes:
			if _, ok := specs[int(f.SpecID)]; !ok && !unknown[f.SpecID] {
				unknown[f.SpecID] = true
				ix.unknownSpec = append(ix.unknownSpec, f.SpecID)
			}
			if isUnpartitioned(f, specs) {
				ix.eqGlobal = append(ix.eqGlobal, f)
			} else {
				k := partitionKey(f.SpecID, f.Partition)
				ix.eqByKey[k] = append(ix.eqByKey[k], f)
			}
		}
	}
	for _, m := range []map[string][]File{ix.dvByPath, ix.posByPath, ix.posByKey, ix.eqByKey} {
		for _, fs := range m {
			sortFiles(fs)
		}
	}
	sortFiles(ix.eqGlobal)
	return ix
}

// UnknownSpecs lists the spec ids of equality delete files that specs did
// not describe (iceberg-go refuses to plan those; Applies treats such a
// file as global exactly when its partition tuple is empty).
func (ix *Index) UnknownSpecs() []int32 { return slices.Clone(ix.unknownSpec) }

// For returns the delete files that apply to d, ordered deletion vectors,
// then position deletes, then equality deletes, each by data sequence
// number, path and blob offset. Position delete files are left out when a
// deletion vector applies.
func (ix *Index) For(d DataFile) []File {
	var out []File
	for _, f := range ix.dvByPath[d.Path] {
		if f.DataSeq < 0 || d.DataSeq <= f.DataSeq {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = append(out, fromSeq(ix.posByPath[d.Path], d.DataSeq, false)...)
		if len(ix.posByKey) > 0 {
			out = append(out, fromSeq(ix.posByKey[partitionKey(d.SpecID, d.Partition)], d.DataSeq, false)...)
		}
	}
	eq := fromSeq(ix.eqGlobal, d.DataSeq, true)
	if len(ix.eqByKey) > 0 && len(d.Partition) > 0 {
		eq = append(eq, fromSeq(ix.eqByKey[partitionKey(d.SpecID, d.Partition)], d.DataSeq, true)...)
	}
	out = append(out, eq...)
	sortFiles(out)
	return out
}

// fromSeq returns the files (sorted by DataSeq) with DataSeq >= seq, or >
// seq when strict.
func fromSeq(fs []File, seq int64, strict bool) []File {
	i := sort.Search(len(fs), func(i int) bool {
		if strict {
			return fs[i].DataSeq > seq
		}
		return fs[i].DataSeq >= seq
	})
	return fs[i:]
}

func sortFiles(fs []File) {
	slices.SortStableFunc(fs, compareFiles)
}

func compareFiles(a, b File) int {
	return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.DataSeq, b.DataSeq), cmp.Compare(a.Path, b.Path),
		cmp.Compare(a.BlobOffset, b.BlobOffset), cmp.Compare(a.BlobLength, b.BlobLength), cmp.Compare(a.Size, b.Size))
}

func rank(f File) int {
	switch {
	case f.IsDV():
		return 0
	case f.Content == PositionDeletes:
		return 1
	}
	return 2
}

// partitionKey is an injective string of (spec id, partition tuple) with
// partition values in canonical form.
func partitionKey(specID int32, partition map[int]any) string {
	ids := make([]int, 0, len(partition))
	for id := range partition {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := strconv.AppendInt(make([]byte, 0, 64), int64(specID), 10)
	b = append(b, '|')
	for _, id := range ids {
		b = strconv.AppendInt(b, int64(id), 10)
		b = append(b, '=')
		b = appendCanonicalPartitionValue(b, partition[id])
		b = append(b, ';')
	}
	return string(b)
}

func appendCanonicalPartitionValue(b []byte, v any) []byte {
	appendInt := func(i int64) []byte { return strconv.AppendInt(append(b, 'i'), i, 10) }
	appendLen := func(tag byte, s []byte) []byte {
		b = strconv.AppendInt(append(b, tag), int64(len(s)), 10)
		return append(append(b, ':'), s...)
	}
	switch x := v.(type) {
	case nil:
		return append(b, 'z')
	case bool:
		if x {
			return append(b, 'T')
		}
		return append(b, 'F')
	case int:
		return appendInt(int64(x))
	case int8:
		return appendInt(int64(x))
	case int16:
		return appendInt(int64(x))
	case int32:
		return appendInt(int64(x))
	case int64:
		return appendInt(x)
	case iceberg.Date:
		return appendInt(int64(x))
	case iceberg.Time:
		return appendInt(int64(x))
	case iceberg.Timestamp:
		return appendInt(int64(x))
	case iceberg.TimestampNano:
		return appendInt(int64(x))
	case float32:
		return appendFloatKey(b, float64(x))
	case float64:
		return appendFloatKey(b, x)
	case string:
		return appendLen('s', []byte(x))
	case []byte:
		return appendLen('B', x)
	case uuid.UUID:
		return appendLen('B', x[:])
	case [16]byte:
		return appendLen('B', x[:])
	case iceberg.Decimal:
		return appendDecimalKey(b, x.Val.BigInt(), int32(x.Scale))
	case iceberg.DecimalLiteral:
		return appendDecimalKey(b, x.Val.BigInt(), int32(x.Scale))
	case *big.Int:
		return appendInt(x.Int64())
	}
	// iceberg-go refuses other types; a typed fallback keeps distinct values
	// distinct and equal values equal for any comparable representation.
	return appendLen('?', fmt.Appendf(nil, "%s:%#v", reflect.TypeOf(v), v))
}

func appendFloatKey(b []byte, f float64) []byte {
	bits := math.Float64bits(f)
	if math.IsNaN(f) {
		bits = canonicalNaNBits
	}
	return binary.BigEndian.AppendUint64(append(b, 'f'), bits)
}

// appendDecimalKey encodes a decimal by value: trailing zeros of the
// unscaled value are folded into the scale.
func appendDecimalKey(b []byte, unscaled *big.Int, scale int32) []byte {
	u, s := normalizeDecimal(unscaled, scale)
	b = strconv.AppendInt(append(b, 'd'), int64(s), 10)
	return append(append(b, ':'), u.String()...)
}

var bigTen = big.NewInt(10)

func normalizeDecimal(unscaled *big.Int, scale int32) (*big.Int, int32) {
	if unscaled.Sign() == 0 {
		return new(big.Int), 0
	}
	u := new(big.Int).Set(unscaled)
	q, r := new(big.Int), new(big.Int)
	for {
		q.QuoRem(u, bigTen, r)
		if r.Sign() != 0 {
			return u, scale
		}
		u.Set(q)
		scale--
	}
}

// canonicalNaNBits is the NaN every NaN compares as (Java's Double.NaN).
const canonicalNaNBits = 0x7ff8000000000000
