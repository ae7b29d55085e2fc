package tables

import (
	"strings"
	"testing"
)

// FuzzParseName: a request's warehouse and table name are accepted only as
// plain names (no path tricks), or refused briefly, never a panic.
func FuzzParseName(f *testing.F) {
	for _, s := range [][2]string{{"", "demo.events"}, {"vault", "ns.t"}, {"w", "a.b.c"}, {"../w", "x.y"}, {"w", "ns/../t"}, {"w", ".."}, {"w", "a..b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, warehouse, name string) {
		n, err := ParseName(warehouse, name, "warehouse")
		if err != nil {
			if len(err.Error()) > 400 {
				t.Fatalf("a refusal of %d bytes", len(err.Error()))
			}
			return
		}
		for _, part := range []string{n.Warehouse, n.Table} {
			if part == "" || strings.ContainsAny(part, "/\\") || part == "." || part == ".." {
				t.Fatalf("(%q, %q) accepted as %+v", warehouse, name, n)
			}
		}
	})
}
