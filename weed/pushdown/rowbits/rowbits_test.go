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
