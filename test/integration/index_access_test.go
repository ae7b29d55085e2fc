package integration

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// The side-index RPCs are authorized like every other: on a cluster with
// identities an unsigned caller is refused by the volume's BuildIndexes and
// EvaluateIndexes and the catalog's BuildIndexes and ListIndexes before any
// work, and an identity that may only read a table may list its indexes
// but not build them.
func TestSideIndexRPCsRefuseOutsidersBeforeAnyWork(t *testing.T) {
	c := startIdentityCluster(t)
	open := appendRows(t, createDeleteTable(t, c, "acl_it", "open", 2), 0, 300)
	file := filesOf(t, open)[0]
	alice := c.Endpoints()
	alice.AccessKey, alice.SecretKey = "AKALICE000000000", "alice-secret"
	v, cat := c.Volume(t), c.Catalog(t)
	ctx := context.Background()
	signedAs := func(addr, method string, req proto.Message) context.Context {
		t.Helper()
		sctx, err := alice.SignCall(ctx, addr, method, req)
		if err != nil {
			t.Fatal(err)
		}
		return sctx
	}

	build := &pushdown_pb.BuildIndexesRequest{DataFiles: []*pushdown_pb.DataFileDescriptor{{Path: file, SizeBytes: 1, RecordCount: 1}},
		Indexes: []*pushdown_pb.IndexSpec{{FieldId: 1, Kind: "btree"}}}
	_, err := v.BuildIndexes(ctx, build)
	wantDenied(t, "an unsigned volume BuildIndexes", err, "signature was not accepted")
	eval := &pushdown_pb.EvaluateIndexesRequest{Probes: []*pushdown_pb.IndexProbe{{DataFile: file, FieldId: 1, Kind: "btree"}}}
	_, err = v.EvaluateIndexes(ctx, eval)
	wantDenied(t, "an unsigned EvaluateIndexes", err, "signature was not accepted")
	eval.Probes[0].DataFile = "/etc/iam/identities/probe.json"
	_, err = v.EvaluateIndexes(signedAs(c.VolumePushdownAddr(), "EvaluateIndexes", eval), eval)
	wantDenied(t, "EvaluateIndexes of a file outside the buckets", err, "is not an object in a bucket")
	pages := &pushdown_pb.ReadPageIndexesRequest{Probes: []*pushdown_pb.IndexProbe{{DataFile: file, FieldId: 1, Kind: "page_index"}}}
	_, err = v.ReadPageIndexes(ctx, pages)
	wantDenied(t, "an unsigned ReadPageIndexes", err, "signature was not accepted")
	pages.Probes[0].DataFile = "/etc/iam/identities/probe.json"
	_, err = v.ReadPageIndexes(signedAs(c.VolumePushdownAddr(), "ReadPageIndexes", pages), pages)
	wantDenied(t, "ReadPageIndexes of a file outside the buckets", err, "is not an object in a bucket")

	tb := &pushdown_pb.BuildTableIndexesRequest{Table: "acl_it.open", Wait: true}
	_, err = cat.BuildIndexes(ctx, tb)
	wantDenied(t, "an unsigned catalog BuildIndexes", err, "signature was not accepted")
	_, err = cat.BuildIndexes(signedAs(c.CatalogAddr(), "BuildIndexes", tb), tb)
	wantDenied(t, "alice builds indexes of a table she may only read", err, `identity "alice" may not write table`)
	li := &pushdown_pb.ListIndexesRequest{Table: "acl_it.open"}
	_, err = cat.ListIndexes(ctx, li)
	wantDenied(t, "an unsigned ListIndexes", err, "signature was not accepted")
	if _, err := cat.ListIndexes(signedAs(c.CatalogAddr(), "ListIndexes", li), li); err != nil {
		t.Fatalf("alice lists the indexes of a table she may read: %v", err)
	}
	closed := &pushdown_pb.ListIndexesRequest{Table: "acl_it.nosuchtable"}
	_, err = cat.ListIndexes(signedAs(c.CatalogAddr(), "ListIndexes", closed), closed)
	wantDenied(t, "alice lists a table she may not read", err, `identity "alice" may not read table`)
}
