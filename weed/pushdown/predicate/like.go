package predicate

import (
	"unicode"
	"unicode/utf8"
)

// Like reports whether s matches the SQL LIKE pattern: '%' matches any run
// of characters, '_' exactly one, '\' makes the next character literal
// (a trailing '\' is itself). Characters are UTF-8 runes (an invalid byte
// is one character). With fold, runes compare under Unicode simple case
// folding (ILIKE), as strings.EqualFold does.
func Like(s, pattern []byte, fold bool) bool {
	p := compileLike(pattern)
	str := decodeRunes(s)
	eq := func(a, b rune) bool { return a == b || (fold && foldEqual(a, b)) }
	// Greedy match with backtracking to the last '%': O(len(s)·len(p)).
	si, pi, star, mark := 0, 0, -1, 0
	for si < len(str) {
		switch {
		case pi < len(p) && p[pi].kind == likeOne:
			si, pi = si+1, pi+1
		case pi < len(p) && p[pi].kind == likeLit && eq(p[pi].r, str[si]):
			si, pi = si+1, pi+1
		case pi < len(p) && p[pi].kind == likeAny:
			star, mark = pi, si
			pi++
		case star >= 0:
			mark++
			si, pi = mark, star+1
		default:
			return false
		}
	}
	for pi < len(p) && p[pi].kind == likeAny {
		pi++
	}
	return pi == len(p)
}

type likeKind uint8

const (
	likeLit likeKind = iota
	likeOne
	likeAny
)

type likeTok struct {
	kind likeKind
	r    rune
}

func compileLike(pattern []byte) []likeTok {
	rs := decodeRunes(pattern)
	out := make([]likeTok, 0, len(rs))
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case r == '\\' && i+1 < len(rs):
			i++
			out = append(out, likeTok{likeLit, rs[i]})
		case r == '%':
			if len(out) == 0 || out[len(out)-1].kind != likeAny {
				out = append(out, likeTok{kind: likeAny})
			}
		case r == '_':
			out = append(out, likeTok{kind: likeOne})
		default:
			out = append(out, likeTok{likeLit, r})
		}
	}
	return out
}

// decodeRunes decodes UTF-8; each invalid byte is one rune of its own
// (0xDC00+byte, outside valid text, so it only equals itself).
func decodeRunes(b []byte) []rune {
	out := make([]rune, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			r, n = 0xDC00+rune(b[0]), 1
		}
		out = append(out, r)
		b = b[n:]
	}
	return out
}

// foldEqual reports whether a and b are in one Unicode simple folding
// orbit.
func foldEqual(a, b rune) bool {
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}

// LikeLiterals splits a LIKE pattern into its literal runs (the text
// between wildcards, escapes resolved), and reports whether the pattern
// starts and ends with a literal (is anchored there).
func LikeLiterals(pattern []byte) (runs []string, anchoredStart, anchoredEnd bool) {
	p := compileLike(pattern)
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			runs = append(runs, string(cur))
			cur = cur[:0]
		}
	}
	for _, t := range p {
		if t.kind == likeLit {
			cur = appendRune(cur, t.r)
			continue
		}
		flush()
	}
	flush()
	anchoredStart = len(p) > 0 && p[0].kind == likeLit
	anchoredEnd = len(p) > 0 && p[len(p)-1].kind == likeLit
	return runs, anchoredStart, anchoredEnd
}

// LikePrefix is the literal prefix every string matching pattern starts
// with (before its first wildcard; "" when it starts with one).
func LikePrefix(pattern []byte) string {
	runs, anchored, _ := LikeLiterals(pattern)
	if !anchored || len(runs) == 0 {
		return ""
	}
	return runs[0]
}

// appendRune appends r as UTF-8, or as the invalid byte decodeRunes
// stood it for.
func appendRune(dst []byte, r rune) []byte {
	if r >= 0xDC00 && r <= 0xDCFF {
		return append(dst, byte(r-0xDC00))
	}
	return utf8.AppendRune(dst, r)
}

// FoldRune is the representative of r's Unicode simple folding orbit
// (its smallest member): two runes are equal under ILIKE exactly when
// their FoldRune are.
func FoldRune(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

// FoldedRunes decodes b as LIKE does (an invalid byte is one character)
// and folds every rune with FoldRune.
func FoldedRunes(b []byte) []rune {
	rs := decodeRunes(b)
	for i, r := range rs {
		rs[i] = FoldRune(r)
	}
	return rs
}
