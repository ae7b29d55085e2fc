package flightsql

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestFilterPatternsMatchAsSQLLikeAndMetaCharactersAreLiteral(t *testing.T) {
	p := func(s string) *string { return &s }
	for _, tc := range []struct {
		pattern *string
		name    string
		want    bool
	}{
		{nil, "anything", true},
		{p(""), "anything", true},
		{p("demo"), "demo", true},
		{p("demo"), "demo2", false},
		{p("dem_"), "demo", true},
		{p("d%o"), "demo", true},
		{p("d%o"), "demos", false},
		{p("a.b"), "axb", false},
		{p("a.b"), "a.b", true},
		{p("(x)+"), "(x)+", true},
	} {
		m, err := likeMatcher(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := m(tc.name); got != tc.want {
			t.Errorf("pattern %v on %q: %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
	long := string(make([]byte, 2000))
	if _, err := likeMatcher(&long); err == nil {
		t.Error("a 2000-byte pattern was accepted")
	}
}

func TestParameterValuesAreReadFromTheirArrowTypesAndNullsAreNil(t *testing.T) {
	mem := memory.DefaultAllocator
	sb := array.NewStringBuilder(mem)
	sb.Append("tenant-1")
	sb.AppendNull()
	strs := sb.NewArray()
	defer strs.Release()
	ib := array.NewInt64Builder(mem)
	ib.Append(42)
	ints := ib.NewArray()
	defer ints.Release()
	tb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
	tb.Append(arrow.Timestamp(1_767_225_600_000_000))
	tss := tb.NewArray()
	defer tss.Release()
	if v, err := paramValue(strs, 0); err != nil || v != "tenant-1" {
		t.Errorf("string: %v %v", v, err)
	}
	if v, err := paramValue(strs, 1); err != nil || v != nil {
		t.Errorf("NULL: %v %v", v, err)
	}
	if v, err := paramValue(ints, 0); err != nil || v != int64(42) {
		t.Errorf("int64: %v %v", v, err)
	}
	if v, err := paramValue(tss, 0); err != nil || !v.(time.Time).Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("timestamp: %v %v", v, err)
	}
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
	lb.Append(true)
	lists := lb.NewArray()
	defer lists.Release()
	if _, err := paramValue(lists, 0); err == nil {
		t.Error("a list parameter was accepted")
	}
}
