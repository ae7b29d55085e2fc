package sideindex

import (
	"strings"
	"testing"
)

func TestEveryKindChecksItsBuildParametersNamingTheOneRefused(t *testing.T) {
	cases := []struct {
		kind   string
		params map[string]string
		want   string // "" = accepted
	}{
		{"bitmap", nil, ""},
		{"bitmap", map[string]string{"max_distinct": "100000"}, ""},
		{"bitmap", map[string]string{"max_distinct": "0"}, `build parameter max_distinct="0": want an integer in [1, 16777216]`},
		{"bitmap", map[string]string{"max_distinct": "lots"}, `build parameter max_distinct="lots"`},
		{"bitmap", map[string]string{"rows_per_group": "8"}, `unknown build parameter "rows_per_group": want max_distinct`},
		{"btree", map[string]string{"rows_per_group": "1024"}, ""},
		{"btree", map[string]string{"rows_per_group": "-1"}, `build parameter rows_per_group="-1"`},
		{"bloom", map[string]string{"fpp": "0.05", "ndv": "100", "max_bytes": "4096"}, ""},
		{"bloom", map[string]string{"fpp": "1.5"}, `build parameter fpp="1.5": want a number in (0, 1)`},
		{"bloom", map[string]string{"max_bytes": "1"}, `build parameter max_bytes="1"`},
		{"ngram", map[string]string{"n": "4"}, `unknown build parameter "n": this kind takes none`},
		{"label_list", map[string]string{"max_distinct": "9"}, `unknown build parameter "max_distinct": this kind takes none`},
		{"page_index", nil, ""},
		{"ivf", map[string]string{"nlist": "16", "seed": "7"}, ""},
		{"ivf", map[string]string{"m": "8"}, `unknown build parameter "m": want nlist, min_rows, seed, iterations`},
		{"ivf_pq", map[string]string{"m": "8", "iterations": "500"}, `build parameter iterations="500"`},
		{"bitmap", map[string]string{strings.Repeat("k", 1000): "1"}, `…"`},
	}
	for _, c := range cases {
		k, ok := Lookup(c.kind)
		if !ok {
			t.Fatalf("no kind %s", c.kind)
		}
		err := k.CheckParams(c.params)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %v: refused: %v", c.kind, c.params, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %v: %v; want an error containing %s", c.kind, c.params, err, c.want)
		case err != nil && len(err.Error()) > 200:
			t.Errorf("%s: error echoes %d bytes", c.kind, len(err.Error()))
		}
	}
}
