package perr

import (
	"strings"
	"testing"
)

// Quote echoes at most MaxQuoted bytes of client input and at most
// 2×MaxQuoted bytes of quoted text however the input escapes, naming the
// length of what it cut; short input is quoted whole.
func TestQuoteBoundsWhatAMessageEchoes(t *testing.T) {
	if got := Quote(`a"b`); got != `"a\"b"` {
		t.Fatalf("short input: %s", got)
	}
	long := strings.Repeat("x", 1000)
	if got := Quote(long); got != `"`+strings.Repeat("x", MaxQuoted)+`"… (1000 bytes)` {
		t.Fatalf("long text: %s", got)
	}
	binary := strings.Repeat("\xb6\x01", 500)
	got := Quote(binary)
	q := got[:strings.LastIndex(got, `"`)+1]
	if len(q) > 2*MaxQuoted+2 || !strings.HasSuffix(got, "… (1000 bytes)") || len(q) < MaxQuoted {
		t.Fatalf("binary input quoted as %d bytes (%s): want at most %d, and its length named", len(q), got, 2*MaxQuoted+2)
	}
	if got := Quote("日本語" + strings.Repeat("語", 40)); !strings.HasSuffix(got, "… (129 bytes)") || strings.Contains(got, `\x`) {
		t.Fatalf("UTF-8 input cut inside a character: %s", got)
	}
}
