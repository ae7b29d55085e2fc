package grpcutil

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// Messages small and large (pooled buffers) marshal and read back as
// gRPC's own codec writes them; what is not a protobuf message is an
// error.
func TestTheMessageCodecReadsBackWhatItWritesAsProtobufDoes(t *testing.T) {
	for _, n := range []int{0, 10, pooledMessageBytes, 40 << 10, 3 << 20} {
		msg := &pushdown_pb.ReadRowsResponse{Files: []*pushdown_pb.ReadRowsFileResult{{Path: "s3://b/f.parquet", Rows: int64(n), ColumnsIpc: bytes.Repeat([]byte{7}, n)}}}
		data, err := messageCodec{}.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		raw := data.Materialize()
		if want, _ := proto.Marshal(msg); !bytes.Equal(raw, want) {
			t.Fatalf("%d bytes: marshalled %d bytes, protobuf writes %d", n, len(raw), len(want))
		}
		got := &pushdown_pb.ReadRowsResponse{}
		if err := (messageCodec{}).Unmarshal(data, got); err != nil || !proto.Equal(got, msg) {
			t.Fatalf("%d bytes: read back %v", n, err)
		}
		data.Free()
	}
	if _, err := (messageCodec{}).Marshal("not a message"); err == nil {
		t.Fatal("a string marshalled as a message")
	}
}
