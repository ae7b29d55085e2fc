package catalog

import (
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// filled is a PlannedFile with every field set (a message field to an
// empty message, a list to one element), whatever fields it has.
func filled(t *testing.T) *pushdown_pb.PlannedFile {
	t.Helper()
	pf := &pushdown_pb.PlannedFile{}
	m := pf.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			l.Append(l.NewElement())
		case fd.IsMap():
			t.Fatalf("PlannedFile.%s is a map: teach this test to fill it", fd.Name())
		case fd.Kind() == protoreflect.MessageKind:
			m.Set(fd, protoreflect.ValueOfMessage(m.NewField(fd).Message()))
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, protoreflect.ValueOfString("s"+string(fd.Name())))
		case fd.Kind() == protoreflect.BoolKind:
			m.Set(fd, protoreflect.ValueOfBool(true))
		case fd.Kind() == protoreflect.Int32Kind:
			m.Set(fd, protoreflect.ValueOfInt32(int32(i+1)))
		case fd.Kind() == protoreflect.Int64Kind:
			m.Set(fd, protoreflect.ValueOfInt64(int64(i+1)))
		case fd.Kind() == protoreflect.BytesKind:
			m.Set(fd, protoreflect.ValueOfBytes([]byte{byte(i)}))
		default:
			t.Fatalf("PlannedFile.%s has kind %s: teach this test to fill it", fd.Name(), fd.Kind())
		}
	}
	return pf
}

func TestOwnFilesCopiesEveryFieldOfAPlannedFileIntoAMessageOfItsOwn(t *testing.T) {
	shared := filled(t)
	files := []*pushdown_pb.PlannedFile{shared}
	ownFiles(files)
	if files[0] == shared {
		t.Fatal("the response still holds the planner's shared PlannedFile")
	}
	if !proto.Equal(files[0], shared) {
		t.Fatalf("the copy differs from the planned file (a field left out of ownFiles?):\n got %v\nwant %v", files[0], shared)
	}
	files[0].ReadEndpoint = "elsewhere:1"
	if shared.GetReadEndpoint() == "elsewhere:1" {
		t.Fatal("setting the copy's read endpoint changed the shared message")
	}
}

func TestNestByFileListsEachEntryUnderItsFileAndEmptiesTheFlatLists(t *testing.T) {
	a, b := &pushdown_pb.PlannedFile{File: "a"}, &pushdown_pb.PlannedFile{File: "b"}
	resp := &pushdown_pb.ParquetPushdownResponse{
		Files:      []*pushdown_pb.PlannedFile{a, b},
		RowGroups:  []*pushdown_pb.RowGroupRef{{File: "b", RowGroup: 1}, {File: "a", RowGroup: 0}, {File: "b", RowGroup: 3}, {File: "ghost", RowGroup: 9}},
		Pages:      []*pushdown_pb.PageRef{{File: "a", Page: 2}, {File: "b", Page: 5}},
		FileRanges: []*pushdown_pb.FileRange{{File: "a", Offset: 4, Length: 8}, {File: "a", Offset: 40, Length: 2}, {File: "ghost", Offset: 1, Length: 1}},
	}
	nestByFile(resp)
	if len(resp.GetRowGroups())+len(resp.GetPages())+len(resp.GetFileRanges()) != 0 {
		t.Fatalf("flat lists left: %d row groups, %d pages, %d ranges", len(resp.GetRowGroups()), len(resp.GetPages()), len(resp.GetFileRanges()))
	}
	rgs := func(pf *pushdown_pb.PlannedFile) (out []int32) {
		for _, rg := range pf.GetRowGroups() {
			out = append(out, rg.GetRowGroup())
		}
		return out
	}
	if got := rgs(a); len(got) != 1 || got[0] != 0 {
		t.Errorf("a's row groups = %v, want [0]", got)
	}
	if got := rgs(b); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("b's row groups = %v, want [1 3] in plan order", got)
	}
	if len(a.GetPages()) != 1 || a.GetPages()[0].GetPage() != 2 || len(b.GetPages()) != 1 || b.GetPages()[0].GetPage() != 5 {
		t.Errorf("pages a=%v b=%v", a.GetPages(), b.GetPages())
	}
	if len(a.GetRanges()) != 2 || a.GetRanges()[1].GetOffset() != 40 || len(b.GetRanges()) != 0 {
		t.Errorf("ranges a=%v b=%v", a.GetRanges(), b.GetRanges())
	}
}
