package cli

import (
	"strings"
	"testing"
)

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
