package predicate

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

func TestLikeMatchesSQLPatternsRuneByRune(t *testing.T) {
	for _, c := range []struct {
		s, p string
		fold bool
		want bool
	}{
		{"timeout after 3s", "%timeout%", false, true},
		{"TIMEOUT", "%timeout%", false, false},
		{"TIMEOUT", "%timeout%", true, true},
		{"abc", "abc", false, true},
		{"abc", "ab", false, false},
		{"abc", "a_c", false, true},
		{"ac", "a_c", false, false},
		{"", "%", false, true},
		{"", "_", false, false},
		{"", "", false, true},
		{"x", "", false, false},
		{"東京", "東_", false, true},   // _ is one rune, not one byte
		{"東京", "東__", false, false}, // two runes, not six bytes
		{"Zürich", "zÜRICH", true, true},
		{"Zürich", "zÜRICH", false, false},
		{"\u212a", "k", true, true}, // KELVIN SIGN folds to k
		{"straße", "STRASSE", true, false},
		{"50%", "50\\%", false, true},
		{"50x", "50\\%", false, false},
		{"a_b", "a\\_b", false, true},
		{"axb", "a\\_b", false, false},
		{"a\\", "a\\", false, true}, // a trailing escape is itself
		{"mississippi", "%iss%ppi", false, true},
		{"mississippi", "m%s%s%s%i", false, true},
		{"mississippi", "m%s%s%s%s%s%i", false, false},
		{"k\xff", "k_", false, true}, // an invalid byte is one character
		{"k\xff", "%\xff", false, true},
	} {
		if got := Like([]byte(c.s), []byte(c.p), c.fold); got != c.want {
			t.Errorf("Like(%q, %q, fold=%v) = %v, want %v", c.s, c.p, c.fold, got, c.want)
		}
	}
}

func TestLikeLiteralsAreTheRunsBetweenWildcards(t *testing.T) {
	runs, start, end := LikeLiterals([]byte("ab%c_de\\%f%"))
	if len(runs) != 3 || runs[0] != "ab" || runs[1] != "c" || runs[2] != "de%f" || !start || end {
		t.Fatalf("LikeLiterals = %q %v %v", runs, start, end)
	}
	if p := LikePrefix([]byte("%x")); p != "" {
		t.Fatalf("LikePrefix(%%x) = %q", p)
	}
	if p := LikePrefix([]byte("k\xff%")); p != "k\xff" {
		t.Fatalf("LikePrefix keeps an invalid byte: %q", p)
	}
}

func TestArrayContainsIsThreeValued(t *testing.T) {
	s := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "tags", Type: &iceberg.ListType{ElementID: 2, Element: iceberg.PrimitiveTypes.String}})
	e, err := Bind(&Leaf{FieldID: 1, Op: OpArrayContains, Raw: []iceberg.Literal{iceberg.StringLiteral("gpu")}}, s, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	neg := Negate(e)
	str := func(xs ...any) value.Value {
		var out []value.Value
		for _, x := range xs {
			if x == nil {
				out = append(out, value.Value{})
			} else {
				out = append(out, value.OfString(x.(string)))
			}
		}
		return value.OfList(out)
	}
	for _, c := range []struct {
		name     string
		v        value.Value
		null     bool
		pos, neg Tri
	}{
		{"NULL list", value.Value{}, true, Unknown, Unknown},
		{"empty list", str(), false, False, True},
		{"holds it", str("cpu", "gpu"), false, True, False},
		{"holds it twice", str("gpu", "gpu"), false, True, False},
		{"holds it and a NULL", str(nil, "gpu"), false, True, False},
		{"only a NULL besides", str(nil, "cpu"), false, Unknown, Unknown},
		{"not it", str("cpu", "GPU"), false, False, True},
	} {
		row := func(int) (value.Value, bool) { return c.v, c.null }
		if got := Eval(e, row, IEEE); got != c.pos {
			t.Errorf("%s: array_contains = %v, want %v", c.name, got, c.pos)
		}
		if got := Eval(neg, row, TotalOrder); got != c.neg {
			t.Errorf("%s: NOT array_contains = %v, want %v", c.name, got, c.neg)
		}
	}
	if _, err := Bind(&Leaf{FieldID: 1, Op: OpArrayContains, Raw: []iceberg.Literal{iceberg.Int64Literal(3)}}, s, DefaultLimits); err == nil {
		t.Fatalf("array_contains(list<string>, 3) bound")
	}
}
