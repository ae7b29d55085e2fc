// Package demo generates and loads the demo Iceberg table (`demo.events`):
// Parquet files written with arrow-go, uploaded through the S3 gateway and
// committed with iceberg-go through the Iceberg REST catalog.
//
//	Generate(spec) ──▶ F Parquet files (row groups, optional page index + bloom)
//	                      │ PutObject (aws-sdk-go-v2, S3 gateway)
//	                      ▼
//	          <table location>/data/part-NNNNN.parquet
//	                      │ Transaction.AddFiles + Commit (iceberg-go, REST catalog)
//	                      ▼
//	                 demo.events, one snapshot
//
// Columns and their layout, chosen to exercise every pruning tier:
//
//	id         int64        unique, shuffled across and within files (unclustered)
//	ts         timestamp    sorted over the whole table (clustered)
//	tenant_id  string       100 values, each confined to a few files
//	status     string       5 values mixed uniformly (prunes nothing)
//	message    string       log-like text; "upstream timeout" in incident bursts
//	                        (≈0.8% of rows, every row group has some)
//	tags       list<string> 0-3 tags per row; "gpu" only on gpu-job bursts (≈1%)
//	embedding  fixed_size_list<float32>[64], 16 latent clusters
package demo

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
)

// Field ids of the demo schema, in the pre-order a catalog assigns them at
// table creation, so the ids written into the Parquet files survive.
const (
	FieldID        = 1
	FieldTS        = 2
	FieldTenant    = 3
	FieldStatus    = 4
	FieldMessage   = 5
	FieldTags      = 6
	FieldTagsElem  = 7
	FieldEmbedding = 8
	FieldEmbElem   = 9
)

// EmbeddingDim is the length of the embedding vectors.
const EmbeddingDim = 64

// Tenants is the number of distinct tenant_id values.
const Tenants = 100

// Statuses are the status values, mixed uniformly.
var Statuses = []string{"ok", "warn", "error", "retry", "timeout"}

var tagVocabulary = []string{"gpu", "cpu", "eu-west", "us-east", "batch", "stream", "canary", "prod", "staging",
	"cache-miss", "cold-start", "retry", "slow", "fast", "mobile", "web", "api", "admin", "billing", "search"}

// Bursts: rare events come in runs of consecutive rows, as they do in
// logs (an incident, a batch job), at a position drawn per window of
// BurstWindow global rows (Spec.BurstWindow overrides it), so with the
// default window every row group of every file holds some and min/max
// statistics prune none of them, yet a page-granular reader that knows the
// rows can skip most pages. Burst lengths scale with the window, so the
// share of rows stays the same. Drawn from a hash of the seed and the
// global row, they leave every other column's values as they were before
// bursts existed.
const (
	BurstWindow = 8192
	// timeout bursts: 32-95 rows per default window (≈0.78%).
	timeoutBurstMin, timeoutBurstSpan = 32, 64
	// gpu bursts: 48-111 rows per default window (≈0.97%).
	gpuBurstMin, gpuBurstSpan = 48, 64
)

// mix is SplitMix64's finalizer: a hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// burstWindow is the spec's burst window in rows.
func (s Spec) burstWindow() int64 {
	if s.BurstWindow > 0 {
		return s.BurstWindow
	}
	return BurstWindow
}

// inBurst reports whether global row g lies in its window's burst of
// stream salt (minLen and span given for the default window).
func (s Spec) inBurst(g int64, salt uint64, minLen, span int64) bool {
	win := s.burstWindow()
	minLen, span = max(1, minLen*win/BurstWindow), max(1, span*win/BurstWindow)
	w := g / win
	h := mix(s.Seed ^ salt ^ mix(uint64(w)))
	n := min(minLen+int64(h%uint64(span)), win-1)
	start := int64((h >> 32) % uint64(win-n))
	off := g - w*win
	return off >= start && off < start+n
}

// InTimeoutBurst reports whether global row g's message reports an
// upstream timeout.
func (s Spec) InTimeoutBurst(g int64) bool {
	return s.inBurst(g, 0x7173, timeoutBurstMin, timeoutBurstSpan)
}

// InGPUBurst reports whether global row g's tags hold "gpu".
func (s Spec) InGPUBurst(g int64) bool { return s.inBurst(g, 0x6770, gpuBurstMin, gpuBurstSpan) }

// Indexed says which files carry page indexes and bloom filters.
type Indexed string

const (
	IndexedAll  Indexed = "all"
	IndexedHalf Indexed = "half"
	IndexedNone Indexed = "none"
)

// ParseIndexed parses -indexed.
func ParseIndexed(s string) (Indexed, error) {
	switch Indexed(s) {
	case IndexedAll, IndexedHalf, IndexedNone:
		return Indexed(s), nil
	}
	return "", fmt.Errorf("-indexed %q: want all, half or none", s)
}

// Spec describes one demo table.
type Spec struct {
	Rows         int64
	Files        int
	RowGroupRows int64 // rows per row group
	PageBytes    int64 // target data page size
	Indexed      Indexed
	Seed         uint64
	StartTime    time.Time
	// FirstRow and FirstFile continue an existing table (demo -append):
	// ids are FirstRow + a permutation of [0, Rows), timestamps continue
	// from global row FirstRow, and files are numbered from FirstFile.
	FirstRow  int64
	FirstFile int
	// PartitionTenant writes one tenant per file and makes tenant_id an
	// identity partition of the table (demo -partition tenant), so a
	// filtered vector query on tenant_id searches only that tenant's
	// files. With fewer files than tenants only every (Tenants/Files)th
	// tenant has rows.
	PartitionTenant bool
	// BurstWindow is the rows per burst window (0: the BurstWindow
	// constant): a larger window gives rarer, longer bursts (incidents of
	// minutes every few hours) at the same share of rows.
	BurstWindow int64
	// PlainTimestamps writes ts without a dictionary, as parquet-mr (its
	// dictionary is no smaller than plain for unique values) and arrow
	// writers at production row-group sizes (the dictionary outgrows its
	// page limit) do; the default's small row groups keep ts dictionary
	// encoded, a dictionary page every reader of a ts page must read.
	PlainTimestamps bool
}

// DefaultSpec is the `make run` demo: 1,000,000 rows in 8 files.
func DefaultSpec() Spec {
	return Spec{Rows: 1_000_000, Files: 8, RowGroupRows: 32_768, PageBytes: 16 << 10, Indexed: IndexedHalf, Seed: 1,
		StartTime: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Validate refuses specs that cannot produce the promised layout.
func (s Spec) Validate() error {
	switch {
	case s.Rows < 1:
		return fmt.Errorf("-rows must be at least 1, got %d", s.Rows)
	case s.Files < 1:
		return fmt.Errorf("-files must be at least 1, got %d", s.Files)
	case int64(s.Files) > s.Rows:
		return fmt.Errorf("-files (%d) cannot exceed -rows (%d)", s.Files, s.Rows)
	case s.RowGroupRows < 1:
		return fmt.Errorf("row group size must be at least 1 row")
	case s.PageBytes < 1024:
		return fmt.Errorf("page size must be at least 1 KiB")
	case s.BurstWindow < 0 || (s.BurstWindow > 0 && s.BurstWindow < 256):
		return fmt.Errorf("burst window must be at least 256 rows, got %d", s.BurstWindow)
	}
	_, err := ParseIndexed(string(s.Indexed))
	return err
}

// FileIndexed reports whether file i carries page indexes and bloom filters.
func (s Spec) FileIndexed(i int) bool {
	switch s.Indexed {
	case IndexedAll:
		return true
	case IndexedNone:
		return false
	}
	return i%2 == 0
}

// IcebergSchema is the demo table's schema.
func IcebergSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: FieldID, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: FieldTS, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp, Required: true},
		iceberg.NestedField{ID: FieldTenant, Name: "tenant_id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: FieldStatus, Name: "status", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: FieldMessage, Name: "message", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: FieldTags, Name: "tags", Type: &iceberg.ListType{ElementID: FieldTagsElem, Element: iceberg.PrimitiveTypes.String, ElementRequired: true}},
		iceberg.NestedField{ID: FieldEmbedding, Name: "embedding", Type: &iceberg.ListType{ElementID: FieldEmbElem, Element: iceberg.PrimitiveTypes.Float32, ElementRequired: true}},
	)
}

func fieldMeta(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
}

// ArrowSchema is the Arrow schema of the demo files, with Parquet field ids.
func ArrowSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldMeta(FieldID)},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Metadata: fieldMeta(FieldTS)},
		{Name: "tenant_id", Type: arrow.BinaryTypes.String, Metadata: fieldMeta(FieldTenant)},
		{Name: "status", Type: arrow.BinaryTypes.String, Metadata: fieldMeta(FieldStatus)},
		{Name: "message", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fieldMeta(FieldMessage)},
		{Name: "tags", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Metadata: fieldMeta(FieldTagsElem)}), Nullable: true, Metadata: fieldMeta(FieldTags)},
		{Name: "embedding", Type: arrow.FixedSizeListOfField(EmbeddingDim, arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Float32, Metadata: fieldMeta(FieldEmbElem)}), Nullable: true, Metadata: fieldMeta(FieldEmbedding)},
	}, nil)
}

// content is the deterministic content of a spec.
type content struct {
	spec      Spec
	ids       []int64 // permutation of [0, Rows)
	fileStart []int64 // first row of each file; file i holds [fileStart[i], fileStart[i+1])
	centroids [][]float32
}

func newContent(s Spec) *content {
	r := rand.New(rand.NewPCG(s.Seed, 0x1d))
	ids := make([]int64, s.Rows)
	for i := range ids {
		ids[i] = s.FirstRow + int64(i)
	}
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	t := &content{spec: s, ids: ids}
	per := s.Rows / int64(s.Files)
	for i := 0; i <= s.Files; i++ {
		start := int64(i) * per
		if i == s.Files {
			start = s.Rows
		}
		t.fileStart = append(t.fileStart, start)
	}
	for c := 0; c < 16; c++ {
		v := make([]float32, EmbeddingDim)
		for d := range v {
			v[d] = float32(r.NormFloat64())
		}
		t.centroids = append(t.centroids, v)
	}
	return t
}

// Message parts: the HTTP code of each status, request verbs and paths.
var (
	statusCodes = map[string]int{"ok": 200, "warn": 299, "error": 500, "retry": 503, "timeout": 504}
	verbs       = []string{"GET", "POST", "PUT", "DELETE"}
	paths       = []string{"/api/v1/orders", "/api/v1/users", "/api/v2/search", "/healthz", "/api/v1/billing/invoices"}
)

// TenantName is the tenant_id value of tenant k.
func TenantName(k int) string { return fmt.Sprintf("tenant-%03d", k) }

// TenantsOfFile are the tenants whose rows file i holds: with fewer files
// than tenants every tenant lives in at most three neighbouring files; with
// more, every file holds one tenant and a tenant spans files/Tenants files.
func TenantsOfFile(i, files int) []int {
	if files >= Tenants {
		return []int{i * Tenants / files}
	}
	var out []int
	for k := 0; k < Tenants; k++ {
		home := k * files / Tenants
		if i == home || (files > 1 && i == (home+1)%files) || (files > 2 && k%3 == 0 && i == (home+2)%files) {
			out = append(out, k)
		}
	}
	return out
}

// TimestampOf is the ts value of global row g (strictly increasing).
func (s Spec) TimestampOf(g int64) time.Time {
	return s.StartTime.Add(time.Duration(g) * 250 * time.Millisecond)
}

// fileRecord builds rows [from, to) of file i as one Arrow record.
func (t *content) fileRecord(mem memory.Allocator, file int, from, to int64) arrow.RecordBatch {
	s := t.spec
	r := rand.New(rand.NewPCG(s.Seed^uint64(s.FirstFile+file)*0x9e3779b97f4a7c15, uint64(s.FirstRow+from)))
	tenants := TenantsOfFile(file, s.Files)
	if s.PartitionTenant {
		tenants = []int{file * Tenants / s.Files}
	}
	b := array.NewRecordBuilder(mem, ArrowSchema())
	defer b.Release()
	idB := b.Field(0).(*array.Int64Builder)
	tsB := b.Field(1).(*array.TimestampBuilder)
	tenB := b.Field(2).(*array.StringBuilder)
	stB := b.Field(3).(*array.StringBuilder)
	msgB := b.Field(4).(*array.StringBuilder)
	tagsB := b.Field(5).(*array.ListBuilder)
	tagB := tagsB.ValueBuilder().(*array.StringBuilder)
	embB := b.Field(6).(*array.FixedSizeListBuilder)
	valB := embB.ValueBuilder().(*array.Float32Builder)
	for g := from; g < to; g++ {
		idB.Append(t.ids[g])
		tsB.Append(arrow.Timestamp(s.TimestampOf(s.FirstRow + g).UnixMicro()))
		tenant := tenants[r.IntN(len(tenants))]
		tenB.Append(TenantName(tenant))
		status := Statuses[r.IntN(len(Statuses))]
		stB.Append(status)
		code := statusCodes[status]
		verb, path, obj, ms := verbs[r.IntN(len(verbs))], paths[r.IntN(len(paths))], r.IntN(100000), 1+r.IntN(2000)
		incident := ""
		if s.InTimeoutBurst(s.FirstRow + g) {
			incident = " upstream timeout"
		}
		msgB.Append(fmt.Sprintf("%s %s/%d %d %dms%s tenant=%s trace=%016x", verb, path, obj, code, ms, incident, TenantName(tenant), r.Uint64()))
		tagsB.Append(true)
		gpu := s.InGPUBurst(s.FirstRow + g)
		hasGPU := false
		for n := r.IntN(4); n > 0; n-- {
			tag := r.IntN(len(tagVocabulary))
			if tag == 0 && !gpu { // "gpu" outside a gpu job: another tag, from the hash of the row
				tag = 1 + int(mix(s.Seed^uint64(s.FirstRow+g))%uint64(len(tagVocabulary)-1))
			}
			hasGPU = hasGPU || tag == 0
			tagB.Append(tagVocabulary[tag])
		}
		if gpu && !hasGPU {
			tagB.Append(tagVocabulary[0])
		}
		embB.Append(true)
		c := t.centroids[(tenant+int(g%3))%len(t.centroids)]
		for d := 0; d < EmbeddingDim; d++ {
			valB.Append(c[d] + float32(0.15*r.NormFloat64()))
		}
	}
	return b.NewRecordBatch()
}

// WriterProperties are the Parquet writer settings of file i.
func (s Spec) WriterProperties(i int) *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(s.RowGroupRows),
		parquet.WithDataPageSize(s.PageBytes),
		parquet.WithDictionaryDefault(true),
		parquet.WithDictionaryFor("id", false),
		parquet.WithDictionaryFor("message", false),
		parquet.WithStats(true),
		parquet.WithCreatedBy("lakeweed demo"),
	}
	if s.PlainTimestamps {
		opts = append(opts, parquet.WithDictionaryFor("ts", false))
	}
	if s.FileIndexed(i) {
		opts = append(opts,
			parquet.WithPageIndexEnabled(true),
			parquet.WithBloomFilterEnabledFor("id", true),
			parquet.WithBloomFilterEnabledFor("tenant_id", true),
			parquet.WithBloomFilterFPP(0.01),
			// Size the filters for a row group's distinct values, as a
			// well-configured writer does (the default assumes 1M values).
			parquet.WithBloomFilterNDVFor("id", min(s.RowGroupRows, s.Rows/int64(s.Files)+1)),
			parquet.WithBloomFilterNDVFor("tenant_id", Tenants),
		)
	} else {
		opts = append(opts, parquet.WithPageIndexEnabled(false))
	}
	return parquet.NewWriterProperties(opts...)
}

// GeneratedFile is one generated Parquet file.
type GeneratedFile struct {
	Index   int
	Rows    int64
	Indexed bool
	Bytes   []byte
}

// WriteFile generates file i.
func WriteFile(t *content, i int) (GeneratedFile, error) {
	s := t.spec
	var buf bytes.Buffer
	mem := memory.NewGoAllocator()
	fw, err := pqarrow.NewFileWriter(ArrowSchema(), &buf, s.WriterProperties(i), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return GeneratedFile{}, err
	}
	from, to := t.fileStart[i], t.fileStart[i+1]
	for start := from; start < to; start += s.RowGroupRows {
		end := min(start+s.RowGroupRows, to)
		rec := t.fileRecord(mem, i, start, end)
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			fw.Close()
			return GeneratedFile{}, fmt.Errorf("write file %d: %w", i, err)
		}
	}
	if err := fw.Close(); err != nil {
		return GeneratedFile{}, fmt.Errorf("close file %d: %w", i, err)
	}
	return GeneratedFile{Index: i, Rows: to - from, Indexed: s.FileIndexed(i), Bytes: buf.Bytes()}, nil
}

// Files generates every file of the spec, calling fn for each in order.
// Files are generated on up to GOMAXPROCS cores at once, each in its own
// goroutine; at most that many are in memory (generated or being
// generated) besides the one fn holds, so memory stays bounded by the file
// size, not the table size:
//
//	file i ─▶ worker ─▶ slot i ─┐
//	file i+1 ─▶ worker ─▶ slot i+1 ─┼─▶ fn, in file order
//	(at most GOMAXPROCS slots open)  ┘
func Files(s Spec, fn func(GeneratedFile) error) error {
	if err := s.Validate(); err != nil {
		return err
	}
	t := newContent(s)
	type generated struct {
		f   GeneratedFile
		err error
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), s.Files))
	// slots holds the files being generated, in file order; the consumer
	// holds one more, so workers files are generated at once.
	slots := make(chan chan generated, workers-1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(slots)
		for i := 0; i < s.Files; i++ {
			slot := make(chan generated, 1)
			select {
			case slots <- slot:
			case <-stop:
				return
			}
			go func() {
				f, err := WriteFile(t, i)
				slot <- generated{f, err}
			}()
		}
	}()
	for slot := range slots {
		g := <-slot
		if g.err != nil {
			return g.err
		}
		if err := fn(g.f); err != nil {
			return err
		}
	}
	return nil
}
