package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
)

// readAs queries table through a fresh connector (no range cache) reading
// planned bytes along path.
func readAs(t *testing.T, c *harness.Cluster, o connector.Options, table, where string, sel ...string) ([]string, connector.Stats, error) {
	t.Helper()
	ctx := context.Background()
	if o.Endpoints.Catalog == "" {
		o.Endpoints = c.Endpoints()
	}
	o.Force, o.NoFallback, o.RangeCacheBytes = true, true, -1
	conn, err := connector.New(ctx, o)
	if err != nil {
		return nil, connector.Stats{}, err
	}
	defer conn.Close()
	res, err := conn.Query(ctx, connector.Query{Table: table, Where: where, Select: sel})
	if err != nil {
		return nil, connector.Stats{}, err
	}
	defer res.Release()
	return rowsOf(t, res.Schema, res.Records), res.Stats, nil
}

// The plan names the volume pushdown service holding each file; the
// connector reads the planned ranges there and returns exactly the rows an
// S3-only read returns, every byte from beside the data (-read volume and
// auto), none through the gateway.
func TestConnectorReadsPlannedRangesBesideTheDataAndReturnsTheRowsAnS3OnlyReadDoes(t *testing.T) {
	c := sharedCluster(t)
	tbl := createDeleteTable(t, c, "volread_it", "events", 2)
	tbl = appendRows(t, tbl, 0, 3000)
	appendRows(t, tbl, 3000, 6000)
	// Naming an endpoint is best effort (a file whose holder is not known
	// yet is read through the gateway): new files are named once the
	// catalog has looked their chunks up, within seconds.
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := connectorExplain(t, c, "volread_it.events", "id >= 1000 AND id < 1400")
		if err != nil {
			t.Fatal(err)
		}
		var wrong []string
		for _, f := range resp.GetFiles() {
			if f.GetReadEndpoint() != c.VolumePushdownAddr() {
				wrong = append(wrong, fmt.Sprintf("%q for %s", f.GetReadEndpoint(), f.GetFile()))
			}
		}
		if len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("plan names read endpoints %v, want %s", wrong, c.VolumePushdownAddr())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, q := range []struct{ where, sel string }{
		{"id >= 1000 AND id < 1400", "id,part,val,name"},
		{"part = 'b' AND val > 30000", "name,id"},
		{"name = 'n4321'", "id,val"},
	} {
		sel := strings.Split(q.sel, ",")
		want, s3, err := readAs(t, c, connector.Options{Read: connector.ReadS3}, "volread_it.events", q.where, sel...)
		if err != nil {
			t.Fatalf("%s, -read s3: %v", q.where, err)
		}
		if len(want) == 0 || s3.BytesVolume != 0 || s3.BytesS3 == 0 || s3.BytesS3 != s3.BytesRead {
			t.Fatalf("%s, -read s3: %d rows, stats %+v", q.where, len(want), s3)
		}
		for _, path := range []connector.ReadPath{connector.ReadVolume, connector.ReadAuto} {
			got, st, err := readAs(t, c, connector.Options{Read: path}, "volread_it.events", q.where, sel...)
			if err != nil {
				t.Fatalf("%s, -read %s: %v", q.where, path, err)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s, -read %s: %d rows, the S3-only read %d:\n got %v\nwant %v", q.where, path, len(got), len(want), got, want)
			}
			// The byte counts of the two paths need not be equal: a range
			// two row groups want is read once only while both are in
			// flight (there is no range cache here), which is timing.
			if st.BytesVolume < st.BytesPlanned || st.BytesS3 != 0 || st.BytesVolumeLocal != st.BytesVolume || st.ReadFallbacks != 0 || st.VolumeCalls == 0 || st.ReadPath != path.String() {
				t.Fatalf("%s, -read %s: stats %+v; want at least the planned bytes, all from the volume service, locally (the S3-only read: %d bytes)", q.where, path, st, s3.BytesS3)
			}
		}
	}
}

// When the volume server whose pushdown service the plan names dies in the
// middle of a query, the rest of the query reads through the S3 gateway
// (the data has a second copy): the answer is exactly the S3-only read's
// and the stats count the fallback; -read volume fails instead of
// answering.
func TestWhenTheNamedVolumeServiceDiesMidQueryTheAnswerIsExactAndStatsCountTheFallback(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	mc := harness.StartMulti(t, harness.MultiOptions{Volumes: 2, Replication: "001"})
	c := &mc.Cluster
	tbl := createDeleteTable(t, c, "volread_down", "events", 2)
	for from := int64(0); from < 9000; from += 3000 {
		tbl = appendRows(t, tbl, from, from+3000)
	}
	const table, where = "volread_down.events", "id >= 100"
	sel := []string{"id", "part", "val", "name"}
	want, _, err := readAs(t, c, connector.Options{Read: connector.ReadS3}, table, where, sel...)
	if err != nil || len(want) != 8900 {
		t.Fatalf("S3-only read: %d rows, %v", len(want), err)
	}
	if got, st, err := readAs(t, c, connector.Options{Read: connector.ReadVolume}, table, where, sel...); err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") || st.BytesS3 != 0 {
		t.Fatalf("healthy cluster, -read volume: %d rows, %v, stats %+v", len(got), err, st)
	}
	resp, err := connectorExplain(t, c, table, where)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]int{}
	for _, f := range resp.GetFiles() {
		named[f.GetReadEndpoint()]++
	}
	victim := -1
	for i, addr := range mc.VolumePushdownAddrs {
		if victim < 0 || named[addr] > named[mc.VolumePushdownAddrs[victim]] {
			victim = i
		}
	}
	if named[mc.VolumePushdownAddrs[victim]] < 3 {
		t.Fatalf("the plan names %v for %d files; want one endpoint holding at least 3", named, len(resp.GetFiles()))
	}
	killed := false
	o := connector.Options{Read: connector.ReadAuto, Workers: 1, Progress: killAfterFirstFile(t, mc, victim, named, &killed)}
	got, st, err := readAs(t, c, o, table, where, sel...)
	if err != nil {
		t.Fatalf("query while the volume server dies: %v", err)
	}
	if !killed || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("query while the volume server dies (killed %v): %d rows, the S3-only read %d", killed, len(got), len(want))
	}
	if st.ReadFallbacks == 0 || st.BytesS3 == 0 || st.BytesVolume == 0 || !strings.Contains(st.ReadFallbackReason, mc.VolumePushdownAddrs[victim]) {
		t.Fatalf("stats after the kill: %+v; want fallbacks naming %s, bytes from both paths", st, mc.VolumePushdownAddrs[victim])
	}
	t.Logf("after the kill: %d fallbacks (%s), %d bytes from volume services, %d through the gateway", st.ReadFallbacks, st.ReadFallbackReason, st.BytesVolume, st.BytesS3)
}

// The connector signs its volume reads with the caller's own S3 identity:
// on a cluster with S3 identities (where an unsigned volume call is
// refused) the admin reads from beside the data with -read volume and gets
// exactly the S3-only read's rows; a caller with a wrong secret, and alice
// on a table she may not read, are refused along every read path and get
// no row. (That the volume service refuses alice's signed ReadRanges of the
// closed table's file is TestVolumePushdownServiceAuthorizesEveryCall…;
// that a refusal falls back only to what the gateway allows the same
// caller is TestARefusedVolumeReadFallsBackOnlyToWhatTheGatewayAllows….)
func TestVolumeReadsCarryTheCallersIdentityAndAnUnauthorizedCallerIsRefused(t *testing.T) {
	c := startIdentityCluster(t)
	appendRows(t, createDeleteTable(t, c, "acl_it", "open", 2), 0, 1200)
	appendRows(t, createDeleteTable(t, c, "acl_it", "closed", 2), 0, 1200)
	admin := c.Endpoints()
	want, _, err := readAs(t, c, connector.Options{Endpoints: admin, Read: connector.ReadS3}, "acl_it.closed", "id < 500", "id", "name")
	if err != nil || len(want) != 500 {
		t.Fatalf("admin, S3-only: %d rows, %v", len(want), err)
	}
	got, st, err := readAs(t, c, connector.Options{Endpoints: admin, Read: connector.ReadVolume}, "acl_it.closed", "id < 500", "id", "name")
	if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") || st.BytesVolume == 0 || st.BytesS3 != 0 {
		t.Fatalf("admin, -read volume: %d rows, %v, stats %+v", len(got), err, st)
	}
	alice := c.Endpoints()
	alice.AccessKey, alice.SecretKey = "AKALICE000000000", "alice-secret"
	wrong := admin
	wrong.SecretKey = "not-the-admin-secret"
	for _, path := range []connector.ReadPath{connector.ReadVolume, connector.ReadAuto, connector.ReadS3} {
		for who, e := range map[string]lakeclient.Endpoints{"alice": alice, "a wrong secret": wrong} {
			rows, _, err := readAs(t, c, connector.Options{Endpoints: e, Read: path}, "acl_it.closed", "id < 500", "id", "name")
			if err == nil || rows != nil {
				t.Fatalf("%s, -read %s: %d rows, %v; want refused", who, path, len(rows), err)
			}
			t.Logf("%s, -read %s: refused: %.160s", who, path, err)
		}
	}
}

// connectorExplain plans a query as the connector does, reading nothing.
func connectorExplain(t *testing.T, c *harness.Cluster, table, where string) (*pushdown_pb.ParquetPushdownResponse, error) {
	t.Helper()
	ctx := context.Background()
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.Explain(ctx, connector.Query{Table: table, Where: where})
}
