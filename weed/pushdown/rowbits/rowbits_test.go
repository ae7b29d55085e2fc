package rowbits

import (
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

func TestDecodeReadsWhatRoaring64WritesAndRefusesGarbageWithoutPanicking(t *testing.T) {
	want := roaring64.BitmapOf(0, 7, 1<<33, 1<<40+5)
	b, err := want.ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil || !got.Equals(want) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	if got, err := Decode(nil); err != nil || !got.IsEmpty() {
		t.Fatalf("no bytes: %v, %v", got, err)
	}
	for name, tc := range map[string]struct {
		b   []byte
		msg string
	}{
		"text":                {[]byte("not roaring"), "does not fit"},
		"short":               {[]byte{1, 2, 3}, "shorter than"},
		"huge count":          {[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0}, "does not fit"},
		"bad inner bitmap":    {[]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "serialCookie"},
		"truncated real one":  {b[:len(b)-3], ""},
		"count past its data": {append([]byte{4, 0, 0, 0, 0, 0, 0, 0}, b[8:]...), ""},
	} {
		got, err := Decode(tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("%s: %v, %v; want an error mentioning %q", name, got, err, tc.msg)
		}
	}
}

func TestFirstKeepsTheSmallestPositionsAndSaysWhetherAnyWereLeftOut(t *testing.T) {
	bm := roaring64.New()
	bm.AddRange(10, 10010)    // 10,000 positions
	bm.Add(1 << 40)           // one far away
	bm.AddRange(70000, 70005) // another container
	got, cut := First(bm, 10003)
	want := roaring64.New()
	want.AddRange(10, 10010)
	want.AddRange(70000, 70003)
	if !cut || !got.Equals(want) {
		t.Fatalf("First(10003) = %d positions (max %d), cut %v; want 10003 ending at 70002, cut", got.GetCardinality(), got.Maximum(), cut)
	}
	if got, cut := First(bm, bm.GetCardinality()); cut || got != bm {
		t.Fatalf("First(all) cut %v, same bitmap %v; want the bitmap itself, not cut", cut, got == bm)
	}
	if got, cut := First(roaring64.New(), 5); cut || !got.IsEmpty() {
		t.Fatalf("First of empty: cut %v, %d positions", cut, got.GetCardinality())
	}
}

// BenchmarkFirst cuts a fifth of 250,000 rows (a status = 'error' answer
// of one file) to a LIMIT 10's first positions.
func BenchmarkFirst(b *testing.B) {
	bm := roaring64.New()
	for p := uint64(0); p < 250_000; p += 5 {
		bm.Add(p)
	}
	for b.Loop() {
		if got, cut := First(bm, 10+4096); !cut || got.GetCardinality() != 4106 {
			b.Fatalf("cut %v to %d", cut, got.GetCardinality())
		}
	}
}
