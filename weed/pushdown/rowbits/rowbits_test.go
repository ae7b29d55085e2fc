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

func TestKeepFirstKeepsTheSmallestPositionsAndSaysWhetherAnyWereLeftOut(t *testing.T) {
	bm := roaring64.New()
	bm.AddRange(10, 10010)    // 10,000 positions
	bm.Add(1 << 40)           // one far away
	bm.AddRange(70000, 70005) // another container
	want := roaring64.New()
	want.AddRange(10, 10010)
	want.AddRange(70000, 70003)
	if got := bm.Clone(); !KeepFirst(got, 10003) || !got.Equals(want) {
		t.Fatalf("KeepFirst(10003) left %d positions (max %d); want 10003 ending at 70002, cut", got.GetCardinality(), got.Maximum())
	}
	if got := bm.Clone(); KeepFirst(got, bm.GetCardinality()) || !got.Equals(bm) {
		t.Fatalf("KeepFirst(all) cut or changed the bitmap: %d positions", got.GetCardinality())
	}
	if got := bm.Clone(); !KeepFirst(got, 0) || !got.IsEmpty() {
		t.Fatalf("KeepFirst(0) left %d positions", got.GetCardinality())
	}
	if empty := roaring64.New(); KeepFirst(empty, 5) || !empty.IsEmpty() {
		t.Fatalf("KeepFirst of empty cut")
	}
}

// BenchmarkKeepFirst cuts a fifth of 250,000 rows (a status = 'error'
// answer of one file) to a LIMIT 10's first positions.
func BenchmarkKeepFirst(b *testing.B) {
	bm := roaring64.New()
	for p := uint64(0); p < 250_000; p += 5 {
		bm.Add(p)
	}
	for b.Loop() {
		b.StopTimer()
		c := bm.Clone()
		b.StartTimer()
		if !KeepFirst(c, 10+4096) || c.GetCardinality() != 4106 {
			b.Fatalf("cut to %d", c.GetCardinality())
		}
	}
}
