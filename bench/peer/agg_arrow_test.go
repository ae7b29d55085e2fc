//go:build duckdb_arrow

package peer

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlexec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// DuckDB fed by the connector's pushdown read: the query's WHERE and
// columns read by the connector (as sqlexec would), the records collected
// and registered as an Arrow view, the aggregation run by DuckDB.
func init() {
	arrowEngine = func(ctx context.Context, conn *connector.Connector, table string, q aggQuery) (int, error) {
		st, err := sqlstmt.Parse(fmt.Sprintf(q.sql, table))
		if err != nil {
			return 0, err
		}
		cq := sqlexec.ConnectorQuery(st, sqlexec.Options{})
		if len(cq.Select) == 0 {
			cq.Select = []string{"id"}
		}
		res, err := conn.Query(ctx, cq)
		if err != nil {
			return 0, err
		}
		defer res.Release()
		c, err := duckdb.NewConnector("", nil)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		dc, err := c.Connect(ctx)
		if err != nil {
			return 0, err
		}
		defer dc.(driver.Conn).Close()
		ar, err := duckdb.NewArrowFromConn(dc)
		if err != nil {
			return 0, err
		}
		rdr, err := array.NewRecordReader(res.Schema, res.Records)
		if err != nil {
			return 0, err
		}
		defer rdr.Release()
		release, err := ar.RegisterView(rdr, "t")
		if err != nil {
			return 0, err
		}
		defer release()
		// the connector applied the WHERE: DuckDB aggregates what it read
		sqlText := fmt.Sprintf(q.sql, "t")
		if i := strings.Index(sqlText, " WHERE "); i >= 0 {
			sqlText = sqlText[:i]
		}
		out, err := ar.QueryContext(ctx, sqlText)
		if err != nil {
			return 0, err
		}
		defer out.Release()
		n := 0
		for out.Next() {
			n += int(out.RecordBatch().NumRows())
		}
		var _ arrow.RecordBatch
		return n, out.Err()
	}
}
