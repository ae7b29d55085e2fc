package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
)

func TestAVectorQueryParsesItsOrderLimitAndDistanceColumn(t *testing.T) {
	q, err := ParseSelect(`SELECT id, _distance FROM demo.events WHERE tenant_id = 'tenant-001' ORDER BY embedding <=> '[0.1, 0.2]' LIMIT 5`)
	if err != nil {
		t.Fatal(err)
	}
	if q.Table != "demo.events" || !slices.Equal(q.Select, []string{"id", "_distance"}) || q.Where == "" || q.Limit != 5 {
		t.Fatalf("%+v", q)
	}
	if q.Vector == nil || q.Vector.Column != "embedding" || q.Vector.Metric != sqlpred.Cosine || !slices.Equal(q.Vector.Vector, []float32{0.1, 0.2}) {
		t.Fatalf("vector order %+v", q.Vector)
	}
	q, err = ParseSelect(`SELECT * FROM demo.events ORDER BY embedding <-> ARRAY[1, 2, 3] ASC LIMIT 10000`)
	if err != nil || q.Vector == nil || q.Vector.Metric != sqlpred.L2 || q.Select != nil {
		t.Fatalf("%+v, %v", q, err)
	}
}

func TestVectorQueriesWithoutAUsableLimitOrOrderAreRefused(t *testing.T) {
	for sql, want := range map[string]string{
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1]'`:                  "needs LIMIT k (1 to 10000)",
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1]' LIMIT 0`:          "LIMIT 0 with ORDER BY a vector distance: want 1 to 10000",
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1]' LIMIT 10001`:      "want 1 to 10000",
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1]' DESC LIMIT 3`:     "ascending",
		`SELECT id FROM demo.events ORDER BY id LIMIT 3`:                           "sorting rows by a column is not supported",
		`SELECT id FROM demo.events ORDER BY ts DESC LIMIT 3`:                      "sorting rows by a column is not supported",
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1]', id LIMIT 3`:      "ORDER BY takes one vector distance, got 2",
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1]' LIMIT 3 OFFSET 2`: "OFFSET is not supported",
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1, oops]' LIMIT 3`:    "element 1",
	} {
		_, err := ParseSelect(sql)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %v, want it to contain %q", sql, err, want)
		}
	}
}

// Out-of-range numeric flags of a query are refused, naming the flag,
// before anything is parsed or any service is called.
func TestAQueryWithAnOutOfRangeFlagIsRefusedNamingIt(t *testing.T) {
	for _, tc := range []struct{ flag, name string }{
		{"-volumeRowsMinKB=-1", "-volumeRowsMinKB"},
		{"-volumeRowsMinKB=1048577", "-volumeRowsMinKB"},
		{"-workers=-2", "-workers"},
		{"-maxBufferMB=0", "-maxBufferMB"},
	} {
		err := runQuery([]string{"-sql", "SELECT id FROM ns.t", tc.flag})
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Fatalf("%s: %v; want an error naming %s", tc.flag, err, tc.name)
		}
	}
}
