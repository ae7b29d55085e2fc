// Package rowbits decodes the portable roaring64 bitmaps of row positions
// that cross the wire (plans, side-index answers, candidate masks, rows to
// read) and that deletion-vector files hold, from bytes nobody vouches for:
//
//	bytes ─▶ bucket count the bytes can hold? ─no─▶ error (no allocation)
//	        └─yes─▶ roaring64 ReadFrom (each 32-bit bitmap checks itself)
//	              ─▶ Validate: keys in order, no empty bucket ─no─▶ error
//
// roaring64's own ReadFrom allocates as many buckets as the first eight
// bytes say, so garbage there panics (or reserves gigabytes) before any
// check; Decode refuses a count the remaining bytes cannot hold.
package rowbits

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// minBucketBytes is the least a bucket takes: its 4-byte key and a 32-bit
// portable bitmap's cookie and container count.
const minBucketBytes = 4 + 8

// Decode reads a portable roaring64 bitmap; no bytes is the empty bitmap.
func Decode(b []byte) (*roaring64.Bitmap, error) {
	bm := roaring64.New()
	if len(b) == 0 {
		return bm, nil
	}
	if len(b) < 8 {
		return nil, fmt.Errorf("%d bytes are shorter than a portable roaring64 bitmap's 8-byte bucket count", len(b))
	}
	if n := binary.LittleEndian.Uint64(b); n > uint64(len(b)-8)/minBucketBytes {
		return nil, fmt.Errorf("a bucket count of %d does not fit in %d bytes", n, len(b))
	}
	if _, err := bm.ReadFrom(bytes.NewReader(b)); err != nil {
		return nil, err
	}
	// keys out of order, or an empty bucket (on which Maximum and Select
	// panic), are refused here rather than met later
	if err := bm.Validate(); err != nil {
		return nil, fmt.Errorf("not a valid portable roaring64 bitmap: %v", err)
	}
	return bm, nil
}

// KeepFirst cuts bm, in place, to its first n positions (the smallest),
// saying whether any were left out. (Removing the tail's containers: adding
// n positions one by one to a new bitmap cost ten times more.)
func KeepFirst(bm *roaring64.Bitmap, n uint64) bool {
	if bm.GetCardinality() <= n {
		return false
	}
	if n == 0 {
		bm.Clear()
		return true
	}
	last, err := bm.Select(n - 1)
	if err != nil { // cannot happen: bm holds more than n positions
		return false
	}
	if top := bm.Maximum(); top > last {
		bm.RemoveRange(last+1, top)
		bm.Remove(top)
	}
	return true
}
