package rowbits

import (
	"bytes"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// FuzzDecode: client-supplied position bitmaps decode or are refused, never
// a panic, and cutting a decoded one never panics either.
func FuzzDecode(f *testing.F) {
	for _, set := range [][]uint64{{}, {0}, {1, 2, 3, 1 << 40}, {1<<63 + 5}} {
		bm := roaring64.BitmapOf(set...)
		var b bytes.Buffer
		_, _ = bm.WriteTo(&b)
		f.Add(b.Bytes())
	}
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		bm, err := Decode(b)
		if err != nil {
			return
		}
		n := bm.GetCardinality()
		KeepFirst(bm, n/2)
	})
}
