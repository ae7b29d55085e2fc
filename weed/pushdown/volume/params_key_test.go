package volume

import "testing"

func TestIndexParamsKeysAreEqualExactlyWhenTheParamsAre(t *testing.T) {
	same := [][2]map[string]string{
		{nil, {}},
		{{"nlist": "64", "m": "8"}, {"m": "8", "nlist": "64"}},
	}
	for _, c := range same {
		if a, b := paramsKey(c[0]), paramsKey(c[1]); a != b {
			t.Errorf("%v and %v: keys %q and %q differ", c[0], c[1], a, b)
		}
	}
	differ := [][2]map[string]string{
		{nil, {"nlist": ""}},
		{{"a": "b c:d"}, {"a": "b", "c": "d"}},
		{{"ab": "c"}, {"a": "bc"}},
		{{"nlist": "64"}, {"nlist": "65"}},
	}
	for _, c := range differ {
		if a, b := paramsKey(c[0]), paramsKey(c[1]); a == b {
			t.Errorf("%v and %v: the same key %q", c[0], c[1], a)
		}
	}
}
