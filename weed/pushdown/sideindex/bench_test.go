package sideindex

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// BenchmarkBuild builds each kind on a 1M-row random int64 column (no
// page index, no bloom in the file) and reports rows/s and the payload's
// size relative to the column chunks' compressed size.
func BenchmarkBuild(b *testing.B) {
	const rows = 1 << 20
	as := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})}}, nil)
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < rows; i++ {
		ib.Append(r.Int64N(1 << 40))
	}
	col := ib.NewArray()
	tbl := array.NewTableFromRecords(as, []arrow.RecordBatch{array.NewRecordBatch(as, []arrow.Array{col}, rows)})
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(128<<10))
	if err := pqarrow.WriteTable(tbl, &buf, 128<<10, props, pqarrow.NewArrowWriterProperties()); err != nil {
		b.Fatal(err)
	}
	f := loadFile(b, "s3://b/t/data/bench.parquet", buf.Bytes(), iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64}))
	var chunkBytes int64
	for rg := range f.footer.Chunks {
		chunkBytes += f.footer.Chunks[rg][0].Length
	}
	for _, k := range Kinds() {
		if !k.Supports(iceberg.PrimitiveTypes.Int64) {
			continue
		}
		b.Run(k.Name(), func(b *testing.B) {
			in := f.input(b, 1, nil)
			var size int
			for i := 0; i < b.N; i++ {
				p, err := k.Build(context.Background(), in)
				if err != nil {
					b.Fatal(err)
				}
				size = len(p)
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(size)/float64(chunkBytes), "payload/chunk")
		})
	}
}

// BenchmarkBtreeLookup evaluates a point lookup and a 100-id IN against a
// btree of 1M random int64 keys, for several payload group sizes.
func BenchmarkBtreeLookup(b *testing.B) {
	const rows = 1 << 20
	as := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})}}, nil)
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([]int64, rows)
	for i := range keys {
		keys[i] = r.Int64N(1 << 40)
		ib.Append(keys[i])
	}
	col := ib.NewArray()
	tbl := array.NewTableFromRecords(as, []arrow.RecordBatch{array.NewRecordBatch(as, []arrow.Array{col}, rows)})
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 128<<10, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(128<<10)), pqarrow.NewArrowWriterProperties()); err != nil {
		b.Fatal(err)
	}
	s := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	f := loadFile(b, "s3://b/t/data/bench.parquet", buf.Bytes(), s)
	bind := func(op predicate.Op, ids ...int64) *predicate.Leaf {
		var lits []iceberg.Literal
		for _, id := range ids {
			lits = append(lits, iceberg.Int64Literal(id))
		}
		e, err := predicate.Bind(&predicate.Leaf{FieldID: 1, Op: op, Raw: lits}, s, predicate.DefaultLimits)
		if err != nil {
			b.Fatal(err)
		}
		return e.(*predicate.Leaf)
	}
	in100 := make([]int64, 100)
	for i := range in100 {
		in100[i] = keys[r.IntN(rows)]
	}
	for _, per := range []string{"16384", "4096", "1024"} {
		params := map[string]string{"rows_per_group": per}
		in := f.input(b, 1, params)
		payload, err := btreeKind{}.Build(context.Background(), in)
		if err != nil {
			b.Fatal(err)
		}
		idx, err := btreeKind{}.Open(context.Background(), payload, wantOf(in, "btree"))
		if err != nil {
			b.Fatal(err)
		}
		for name, leaf := range map[string]*predicate.Leaf{"point": bind(predicate.OpEq, keys[12345]), "in100": bind(predicate.OpIn, in100...)} {
			b.Run(name+"/group="+per, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := idx.Eval(context.Background(), leaf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkBuildFilesConcurrently builds a btree on each of four 256k-row
// files with GOMAXPROCS workers (run with -cpu 1,2): the volume builds
// files side by side, one per core, so this ratio is its build scaling.
func BenchmarkBuildFilesConcurrently(b *testing.B) {
	const rows, files = 1 << 18, 4
	sch := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	var ins []Input
	for f := 0; f < files; f++ {
		as := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})}}, nil)
		ib := array.NewInt64Builder(memory.DefaultAllocator)
		r := rand.New(rand.NewPCG(uint64(f), 2))
		for i := 0; i < rows; i++ {
			ib.Append(r.Int64N(1 << 40))
		}
		tbl := array.NewTableFromRecords(as, []arrow.RecordBatch{array.NewRecordBatch(as, []arrow.Array{ib.NewArray()}, rows)})
		var buf bytes.Buffer
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(128<<10))
		if err := pqarrow.WriteTable(tbl, &buf, 128<<10, props, pqarrow.NewArrowWriterProperties()); err != nil {
			b.Fatal(err)
		}
		ins = append(ins, loadFile(b, fmt.Sprintf("s3://b/t/data/f%d.parquet", f), buf.Bytes(), sch).input(b, 1, nil))
	}
	k, _ := Lookup("btree")
	workers := runtime.GOMAXPROCS(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next := make(chan Input, len(ins))
		for _, in := range ins {
			next <- in
		}
		close(next)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Go(func() {
				for in := range next {
					if _, err := k.Build(context.Background(), in); err != nil {
						b.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(rows*files)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
