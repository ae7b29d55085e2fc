package pagedecode

// Every row of chosen pages, decoded into Arrow without a Parquet file
// around them:
//
//	dictionary page + data pages (their bytes)
//	  ─▶ file.NewPageReader ─▶ file.NewRecordReader (arrow-go's record
//	     reader: values spaced by definition levels, validity bits; a
//	     string column straight into an Arrow dictionary or binary builder)
//	  ─▶ the reader's buffers as an Arrow array of the column's type
//	     (zero copy for ints, floats, times; a loop for narrower ints,
//	     decimals and INT96)
//
// pqarrow builds its arrays from the same record reader but attaches it to
// a file's row groups only; the buffers-to-array step is small and is
// done here for the types below. Any other type (an extension whose
// storage is not one of them, nested or repeated columns other than a
// flat list or a struct's only leaf) is refused with ok false: the caller
// decodes another way.

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// RecordsType reports whether Records decodes a top-level, non-repeated
// column descr as typ: typ is pqarrow's Arrow type of the column inferred
// from its Parquet schema alone, or (a string or binary column) an Arrow
// dictionary of it with int32 indices.
func RecordsType(descr *schema.Column, typ arrow.DataType) bool {
	if descr.MaxRepetitionLevel() != 0 || descr.MaxDefinitionLevel() > 1 {
		return false // repeated, or below a struct
	}
	return buildable(descr, typ)
}

// buildable reports whether build makes an array of typ from a record
// reader of descr's values.
func buildable(descr *schema.Column, typ arrow.DataType) bool {
	phys := descr.PhysicalType()
	switch typ.ID() {
	case arrow.INT32, arrow.DATE32, arrow.TIME32, arrow.INT8, arrow.INT16, arrow.UINT8, arrow.UINT16, arrow.UINT32:
		return phys == parquet.Types.Int32
	case arrow.INT64, arrow.TIME64, arrow.UINT64:
		return phys == parquet.Types.Int64
	case arrow.TIMESTAMP:
		return phys == parquet.Types.Int64 || phys == parquet.Types.Int96 && typ.(*arrow.TimestampType).Unit == arrow.Nanosecond
	case arrow.FLOAT32:
		return phys == parquet.Types.Float
	case arrow.FLOAT64:
		return phys == parquet.Types.Double
	case arrow.BOOL:
		return phys == parquet.Types.Boolean
	case arrow.STRING, arrow.BINARY:
		return phys == parquet.Types.ByteArray
	case arrow.DICTIONARY:
		d := typ.(*arrow.DictionaryType)
		return phys == parquet.Types.ByteArray && d.IndexType.ID() == arrow.INT32 && (d.ValueType.ID() == arrow.STRING || d.ValueType.ID() == arrow.BINARY)
	case arrow.FIXED_SIZE_BINARY:
		return phys == parquet.Types.FixedLenByteArray && typ.(*arrow.FixedSizeBinaryType).ByteWidth == descr.TypeLength()
	case arrow.FLOAT16:
		return phys == parquet.Types.FixedLenByteArray && descr.TypeLength() == arrow.Float16SizeBytes
	case arrow.DECIMAL128:
		switch phys {
		case parquet.Types.Int32, parquet.Types.Int64:
			return true
		case parquet.Types.FixedLenByteArray:
			return descr.TypeLength() <= 16
		case parquet.Types.ByteArray:
			return true // each value's length is checked as it is converted
		}
	case arrow.DECIMAL256:
		switch phys {
		case parquet.Types.FixedLenByteArray:
			return descr.TypeLength() <= 32
		case parquet.Types.ByteArray:
			return true
		}
	case arrow.EXTENSION:
		// an extension of a buildable storage (arrow.uuid: 16 fixed bytes)
		st := typ.(arrow.ExtensionType).StorageType()
		return st.ID() != arrow.EXTENSION && st.ID() != arrow.DICTIONARY && buildable(descr, st)
	}
	return false
}

// Records decodes all nrows rows of a top-level, non-repeated column
// descr from pages (as PagesReader takes them: the bytes of whole pages
// of one chunk compressed with codec, a dictionary page first when the
// chunk has one) as an array of typ; ok is false when RecordsType refuses
// the pair (nothing was read). The pages must hold exactly nrows rows.
func Records(descr *schema.Column, codec compress.Compression, pages []byte, nrows int64, typ arrow.DataType, mem memory.Allocator) (arr arrow.Array, ok bool, err error) {
	if !RecordsType(descr, typ) {
		return nil, false, nil
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	info := file.LevelInfo{NullSlotUsage: 1, DefLevel: descr.MaxDefinitionLevel()}
	readAs := typ
	if typ.ID() == arrow.DICTIONARY {
		// the builder's type is changed in place: a copy of the caller's
		d := *typ.(*arrow.DictionaryType)
		readAs = &d
	}
	rr, err := readRecords(descr, info, readAs, codec, pages, nrows, nrows, mem)
	if err != nil {
		return nil, true, err
	}
	defer rr.Release()
	// and no more: a row past them would shift every row after it
	if more, err := rr.ReadRecords(1); err != nil || more != 0 {
		return nil, true, fmt.Errorf("pages planned to hold %d rows hold more (%v)", nrows, err)
	}
	arr, err = build(rr, descr, typ)
	if err == nil && int64(arr.Len()) != nrows {
		arr.Release()
		return nil, true, fmt.Errorf("%d values decoded from pages holding %d rows", arr.Len(), nrows)
	}
	return arr, true, err
}

// readRecords is arrow-go's record reader of descr (levels info, values
// read as typ) over pages (values bounds the page reader), having read
// exactly nrecords records (the caller releases it).
func readRecords(descr *schema.Column, info file.LevelInfo, typ arrow.DataType, codec compress.Compression, pages []byte, values, nrecords int64, mem memory.Allocator) (file.RecordReader, error) {
	pr, err := pageReader(codec, pages, values, mem)
	if err != nil {
		return nil, err
	}
	pool := &sync.Pool{New: func() any { return memory.NewResizableBuffer(mem) }}
	rr := file.NewRecordReader(descr, info, typ, mem, pool)
	fail := func(err error) (file.RecordReader, error) {
		rr.Release()
		return nil, err
	}
	if err := rr.(file.RecordReaderWithError).SetPageReaderWithError(pr); err != nil {
		return fail(err)
	}
	if err := rr.Reserve(nrecords); err != nil {
		return fail(err)
	}
	var read int64
	for read < nrecords && rr.HasMore() {
		n, err := rr.ReadRecords(nrecords - read)
		if err != nil {
			return fail(err)
		}
		if n == 0 {
			break
		}
		read += n
	}
	if read != nrecords {
		return fail(fmt.Errorf("pages planned to hold %d records hold %d", nrecords, read))
	}
	return rr, nil
}

// build makes the array of typ from rr's buffers (RecordsType's types).
func build(rr file.RecordReader, descr *schema.Column, typ arrow.DataType) (arrow.Array, error) {
	n := rr.ValuesWritten()
	switch typ.ID() {
	case arrow.STRING, arrow.BINARY, arrow.DICTIONARY, arrow.FIXED_SIZE_BINARY, arrow.FLOAT16:
		chunks := rr.(file.BinaryRecordReader).GetBuilderChunks()
		defer func() {
			for _, c := range chunks {
				c.Release()
			}
		}()
		if typ.ID() == arrow.DICTIONARY {
			// the reader's chunks are dictionaries of the values it read:
			// one per chunk (a dictionary page each), concatenated unified
			return concatAs(chunks, typ)
		}
		for i, c := range chunks {
			// the builder's own type (binary for a float16's bytes):
			// the same buffers, typed as the column
			chunks[i] = array.MakeFromData(array.NewData(typ, c.Len(), c.Data().Buffers(), nil, c.NullN(), c.Data().Offset()))
			c.Release()
		}
		return concatAs(chunks, typ)
	case arrow.DECIMAL128, arrow.DECIMAL256:
		if p := descr.PhysicalType(); p == parquet.Types.FixedLenByteArray || p == parquet.Types.ByteArray {
			return decimalOfBytes(rr, typ)
		}
	case arrow.EXTENSION:
		ext := typ.(arrow.ExtensionType)
		storage, err := build(rr, descr, ext.StorageType())
		if err != nil {
			return nil, err
		}
		defer storage.Release()
		return array.NewExtensionArrayWithStorage(ext, storage), nil
	}
	valid := rr.ReleaseValidBits()
	if valid != nil {
		defer valid.Release()
	}
	nulls := int(rr.NullCount())
	var values *memory.Buffer
	switch typ.ID() {
	case arrow.BOOL:
		values = rr.(file.BooleanRecordReader).ReleaseValueBitmap()
	case arrow.INT32, arrow.DATE32, arrow.TIME32, arrow.UINT32, arrow.INT64, arrow.TIME64, arrow.UINT64, arrow.FLOAT32, arrow.FLOAT64:
		values = rr.ReleaseValues() // the same bits
	case arrow.TIMESTAMP:
		if descr.PhysicalType() != parquet.Types.Int96 {
			values = rr.ReleaseValues()
			break
		}
		in := parquet.Int96Traits.CastFromBytes(rr.Values())[:n]
		out := make([]int64, n)
		for i, v := range in {
			if valid == nil || valid.Bytes()[i/8]&(1<<(i%8)) != 0 {
				ts, err := v.ToTimestamp()
				if err != nil {
					return nil, fmt.Errorf("INT96 timestamp of row %d: %w", i, err)
				}
				out[i] = int64(ts)
			}
		}
		values = memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(out))
	case arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16:
		in := arrow.Int32Traits.CastFromBytes(rr.Values())[:n]
		width := typ.(arrow.FixedWidthDataType).BitWidth() / 8
		out := make([]byte, n*width)
		for i, v := range in {
			if width == 1 {
				out[i] = byte(v)
			} else {
				binary.LittleEndian.PutUint16(out[2*i:], uint16(v))
			}
		}
		values = memory.NewBufferBytes(out)
	case arrow.DECIMAL128:
		out := make([]decimal128.Num, n)
		if descr.PhysicalType() == parquet.Types.Int32 {
			for i, v := range arrow.Int32Traits.CastFromBytes(rr.Values())[:n] {
				out[i] = decimal128.FromI64(int64(v))
			}
		} else {
			for i, v := range arrow.Int64Traits.CastFromBytes(rr.Values())[:n] {
				out[i] = decimal128.FromI64(v)
			}
		}
		values = memory.NewBufferBytes(arrow.Decimal128Traits.CastToBytes(out))
	default:
		return nil, fmt.Errorf("no array of %s from pages", typ)
	}
	defer values.Release()
	data := array.NewData(typ, n, []*memory.Buffer{valid, values}, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// decimalOfBytes is the decimal128 or decimal256 array of rr's values:
// big-endian two's complement integers of 1 to 16 (32) bytes, fixed or
// variable length (an empty or longer value is an error, as pqarrow's).
func decimalOfBytes(rr file.RecordReader, typ arrow.DataType) (arrow.Array, error) {
	chunks := rr.(file.BinaryRecordReader).GetBuilderChunks()
	defer func() {
		for _, c := range chunks {
			c.Release()
		}
	}()
	width := 16
	if typ.ID() == arrow.DECIMAL256 {
		width = 32
	}
	b := array.NewBuilder(memory.DefaultAllocator, typ)
	defer b.Release()
	for _, c := range chunks {
		raw, ok := c.(interface{ Value(int) []byte })
		if !ok {
			return nil, fmt.Errorf("decimal bytes read as %s", c.DataType())
		}
		for i := 0; i < c.Len(); i++ {
			if c.IsNull(i) {
				b.AppendNull()
				continue
			}
			v := raw.Value(i)
			if len(v) == 0 || len(v) > width {
				return nil, fmt.Errorf("a decimal of %d bytes in a column of type %s", len(v), typ)
			}
			var be [32]byte
			w := be[32-width:]
			if v[0]&0x80 != 0 {
				for j := range w {
					w[j] = 0xff // sign-extended
				}
			}
			copy(w[width-len(v):], v)
			word := func(k int) uint64 { return binary.BigEndian.Uint64(w[8*k:]) }
			switch x := b.(type) {
			case *array.Decimal128Builder:
				x.Append(decimal128.New(int64(word(0)), word(1)))
			case *array.Decimal256Builder:
				x.Append(decimal256.New(word(0), word(1), word(2), word(3)))
			}
		}
	}
	return b.NewArray(), nil
}

// concatAs is chunks (each typed typ) as one array.
func concatAs(chunks []arrow.Array, typ arrow.DataType) (arrow.Array, error) {
	switch len(chunks) {
	case 0:
		return array.MakeArrayOfNull(memory.DefaultAllocator, typ, 0), nil
	case 1:
		chunks[0].Retain()
		return chunks[0], nil
	}
	return array.Concatenate(chunks, memory.DefaultAllocator)
}

// ListRecords decodes nrecords records of a list column from pages (as
// PagesReader takes them; values bounds the page reader: the levels the
// pages may hold) as an array of list.Field's type: list is pqarrow's
// manifest field of the list (pqarrow.NewSchemaManifest: its levels and
// its Arrow type, inferred from the Parquet schema), its one child the
// element leaf descr. The element values are built as Records builds a
// flat column's; the list's offsets and validity come from the
// repetition and definition levels (file.DefRepLevelsToListInfo), as
// pqarrow's list reader does; a large list's offsets are 64-bit. ok is
// false for what it does not build (ListRecordsBuilds: a fixed-size list,
// an element not a leaf of a type Records builds; nothing was read).
func ListRecords(list pqarrow.SchemaField, descr *schema.Column, codec compress.Compression, pages []byte, values, nrecords int64, mem memory.Allocator) (arr arrow.Array, ok bool, err error) {
	elem, rr, ok, err := oneLeafRecords(list, listIDs, 1, descr, codec, pages, values, nrecords, mem)
	if !ok || err != nil {
		return nil, ok, err
	}
	defer rr.Release()
	levels := rr.LevelsPos()
	def, rep := rr.DefLevels()[:levels], rr.RepLevels()[:levels]
	io := file.ValidityBitmapInputOutput{ReadUpperBound: nrecords}
	var valid []byte
	if list.Field.Nullable {
		valid = make([]byte, bitutil.BytesForBits(nrecords))
		io.ValidBits = valid
	}
	var offsetBytes []byte
	var elements int64
	if list.Field.Type.ID() == arrow.LARGE_LIST {
		offsets := make([]int64, nrecords+1)
		err = file.DefRepLevelsToListInfo(def, rep, list.LevelInfo, &io, offsets)
		offsetBytes, elements = arrow.Int64Traits.CastToBytes(offsets), offsets[nrecords]
	} else {
		offsets := make([]int32, nrecords+1)
		err = file.DefRepLevelsToListInfo(def, rep, list.LevelInfo, &io, offsets)
		offsetBytes, elements = arrow.Int32Traits.CastToBytes(offsets), int64(offsets[nrecords])
	}
	if err != nil {
		return nil, true, err
	}
	if io.Read != nrecords {
		return nil, true, fmt.Errorf("%d lists from %d records", io.Read, nrecords)
	}
	item, err := build(rr, descr, elem.Field.Type)
	if err != nil {
		return nil, true, err
	}
	defer item.Release()
	if int64(item.Len()) != elements {
		return nil, true, fmt.Errorf("%d element values for lists of %d elements", item.Len(), elements)
	}
	buffers := []*memory.Buffer{nil, memory.NewBufferBytes(offsetBytes)}
	if io.NullCount > 0 {
		buffers[0] = memory.NewBufferBytes(valid)
	}
	data := array.NewData(list.Field.Type, int(nrecords), buffers, []arrow.ArrayData{item.Data()}, int(io.NullCount), 0)
	defer data.Release()
	return array.MakeFromData(data), true, nil
}

var (
	listIDs   = []arrow.Type{arrow.LIST, arrow.LARGE_LIST}
	structIDs = []arrow.Type{arrow.STRUCT}
)

// ListRecordsBuilds reports whether ListRecords builds list (pqarrow's
// manifest field of a list or large list whose one child is the leaf
// descr, of a type Records builds), reading nothing.
func ListRecordsBuilds(list pqarrow.SchemaField, descr *schema.Column) bool {
	_, ok := oneLeaf(list, listIDs, 1, descr)
	return ok
}

// StructRecordsBuilds reports whether StructRecords builds st, reading
// nothing.
func StructRecordsBuilds(st pqarrow.SchemaField, descr *schema.Column) bool {
	_, ok := oneLeaf(st, structIDs, 0, descr)
	return ok
}

// oneLeaf is the one child of parent (pqarrow's manifest field, of one of
// the types ids, with maxRep repetition levels) when it is the leaf descr,
// of a type Records builds; ok is false for any other shape.
func oneLeaf(parent pqarrow.SchemaField, ids []arrow.Type, maxRep int16, descr *schema.Column) (child pqarrow.SchemaField, ok bool) {
	if parent.Field == nil || !slices.Contains(ids, parent.Field.Type.ID()) || len(parent.Children) != 1 || !parent.Children[0].IsLeaf() || descr.MaxRepetitionLevel() != maxRep {
		return child, false
	}
	child = parent.Children[0]
	if child.Field == nil || child.Field.Type.ID() == arrow.DICTIONARY || !buildable(descr, child.Field.Type) {
		return child, false
	}
	return child, true
}

// oneLeafRecords is the record reader of a field (oneLeaf's parent)
// whose one child is the leaf descr, read from pages (values and records
// bound it as readRecords' do), and that child; ok is false for any other
// shape (nothing was read). The caller releases rr.
func oneLeafRecords(parent pqarrow.SchemaField, ids []arrow.Type, maxRep int16, descr *schema.Column, codec compress.Compression, pages []byte,
	values, records int64, mem memory.Allocator) (child pqarrow.SchemaField, rr file.RecordReader, ok bool, err error) {
	if child, ok = oneLeaf(parent, ids, maxRep, descr); !ok {
		return child, nil, false, nil
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	rr, err = readRecords(descr, child.LevelInfo, child.Field.Type, codec, pages, values, records, mem)
	return child, rr, true, err
}

// StructRecords decodes nrows rows of a struct column whose one child is
// the leaf descr (not repeated) from pages (as Records takes them) as an
// array of st.Field's type: st is pqarrow's manifest field of the struct;
// the child built as Records builds a flat column's values (a slot for
// every row), the struct's validity from the definition levels
// (file.DefLevelsToBitmap), as pqarrow's struct reader does. ok is false
// for what it does not build (nothing was read).
func StructRecords(st pqarrow.SchemaField, descr *schema.Column, codec compress.Compression, pages []byte, nrows int64, mem memory.Allocator) (arr arrow.Array, ok bool, err error) {
	child, rr, ok, err := oneLeafRecords(st, structIDs, 0, descr, codec, pages, nrows, nrows, mem)
	if !ok || err != nil {
		return nil, ok, err
	}
	defer rr.Release()
	if more, err := rr.ReadRecords(1); err != nil || more != 0 {
		return nil, true, fmt.Errorf("pages planned to hold %d rows hold more (%v)", nrows, err)
	}
	io := file.ValidityBitmapInputOutput{ReadUpperBound: nrows, Read: nrows}
	var valid []byte
	if st.Field.Nullable && nrows > 0 {
		valid = make([]byte, bitutil.BytesForBits(nrows))
		io.ValidBits = valid
		file.DefLevelsToBitmap(rr.DefLevels()[:rr.LevelsPos()], st.LevelInfo, &io)
	}
	item, err := build(rr, descr, child.Field.Type)
	if err != nil {
		return nil, true, err
	}
	defer item.Release()
	if int64(item.Len()) != nrows || io.Read != nrows {
		return nil, true, fmt.Errorf("%d values, %d structs from pages holding %d rows", item.Len(), io.Read, nrows)
	}
	buffers := []*memory.Buffer{nil}
	if io.NullCount > 0 {
		buffers[0] = memory.NewBufferBytes(valid)
	}
	data := array.NewData(st.Field.Type, int(nrows), buffers, []arrow.ArrayData{item.Data()}, int(io.NullCount), 0)
	defer data.Release()
	return array.MakeFromData(data), true, nil
}
