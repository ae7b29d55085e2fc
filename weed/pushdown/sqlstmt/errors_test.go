package sqlstmt

import (
	"strings"
	"testing"
)

// A statement's error quotes a bounded piece of it, whatever the length of
// the token the parser or the checks stopped at.
func TestErrorsQuoteABoundedPieceOfTheStatement(t *testing.T) {
	long := strings.Repeat("a", 100000)
	for _, q := range []string{
		"SELECT '" + long + "' '" + long + "' FROM ns.t",
		"SELECT " + long + "( FROM ns.t",
		"SELECT x FROM ns.t WHERE x = '" + long + "' AND",
		"SELECT x FROM ns.t WHERE " + long + " LIKE",
		"DELETE FROM " + long,
		"SELECT x FROM ns.t ORDER BY " + long + " LIMIT",
		"SELECT x FROM " + long,
		"SELECT x FROM ns." + long + " GROUP BY y",
		"SELECT x FROM ns.t GROUP BY " + long + "(1)",
		"SELECT " + long + " FROM ns.t GROUP BY y",
		"SELECT x FROM ns.t ORDER BY " + long + " <-> '[1,2]'",
		"SELECT x FROM ns.t LIMIT '" + long + "'",
		"SELECT x FROM ns.t ORDER BY 1" + strings.Repeat("0", 1000),
		"SELECT " + long + "(x) FROM ns.t",
		"SELECT x FROM ns.t WHERE y IN (" + strings.Repeat("1,", 50000) + ")) ",
		"SELECT x FROM ns.t \x00" + long,
	} {
		_, err := Parse(q)
		if err == nil {
			t.Fatalf("%.60q: accepted", q)
		}
		if len(err.Error()) > 1000 {
			t.Errorf("%.60q: the error echoes %d bytes: %.300s", q, len(err.Error()), err.Error())
		}
	}
}

// FuzzParse: any text parses to a statement or is refused with a message
// of bounded length, never a panic; a statement with parameters binds or
// is refused.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM ns.t", "SELECT tenant_id, COUNT(*) AS n FROM ns.t WHERE status = 'error' GROUP BY tenant_id HAVING COUNT(*) > 1 ORDER BY n DESC NULLS LAST LIMIT 5 OFFSET 2",
		"SELECT id FROM ns.t ORDER BY embedding <-> '[1, 2]' LIMIT 3", "SELECT COUNT(DISTINCT x), SUM(y), AVG(y), MIN(z), MAX(z) FROM ns.t",
		"SELECT id FROM ns.t WHERE id = $1 AND tenant_id = ?", "SELECT", "((", "SELECT x FROM ns.t LIMIT -1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		st, err := Parse(sql)
		if err != nil {
			if len(err.Error()) > 1000+len(Supported) {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if st.Params > 0 {
			params := make([]any, st.Params)
			for i := range params {
				params[i] = int64(i)
			}
			_, _ = st.Bind(params)
		}
	})
}
