package sideindex

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// TestSideBloomAnswersAsTheNativeBloomOfTheSameRowGroup builds side
// blooms sized like the writer's (ndv 64) on a file that carries native
// blooms and asks both filters of every row group the same hashes.
func TestSideBloomAnswersAsTheNativeBloomOfTheSameRowGroup(t *testing.T) {
	ctx := context.Background()
	f := generatedFiles(t, 3000)[1] // page index and native blooms
	r := rand.New(rand.NewPCG(8, 9))
	checked := 0
	for _, field := range f.schema.Fields() {
		if !(bloomKind{}).Supports(field.Type) {
			continue
		}
		in := f.input(t, field.ID, map[string]string{"ndv": "64"})
		payload, err := bloomKind{}.Build(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := bloomKind{}.Open(ctx, payload, wantOf(in, "bloom"))
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := openData(in, &sourceReader{ctx: ctx, src: in.Source})
		if err != nil {
			t.Fatal(err)
		}
		for rg := range f.footer.Chunks {
			rgr, err := (&metadata.BloomFilterReader{Input: bytes.NewReader(f.data), FileMetadata: f.footer.Meta,
				Props: parquet.NewReaderProperties(nil), BufferPool: &sync.Pool{New: func() any { return memory.NewResizableBuffer(memory.DefaultAllocator) }}}).RowGroup(rg)
			if err != nil {
				t.Fatal(err)
			}
			native, err := rgr.GetColumnBloomFilter(in.Column)
			if err != nil || native == nil {
				t.Fatalf("%s rg %d: no native bloom: %v", field.Name, rg, err)
			}
			side, _ := idx.(*bloomIndex).RowGroupBloom(rg)
			if side.Size() != native.Size() {
				t.Fatalf("%s rg %d: side filter has %d bytes, native %d", field.Name, rg, side.Size(), native.Size())
			}
			hashes, err := chunkHashes(rdr, rg, in.Column)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2000; i++ {
				hashes = append(hashes, r.Uint64())
			}
			for _, h := range hashes {
				if side.CheckHash(h) != native.CheckHash(h) {
					t.Fatalf("%s rg %d: hash %x: side says %v, native %v", field.Name, rg, h, side.CheckHash(h), native.CheckHash(h))
				}
				checked++
			}
		}
	}
	t.Logf("%d hashes answered alike", checked)
}
