package deletes

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Equality semantics (Iceberg spec; iceberg-go v0.7.0 differences noted):
//
//   - NULL matches NULL.
//   - Every NaN is one value. iceberg-go compares raw float bits, so NaNs
//     with different payloads (Go's math.NaN() is 0x7FF8000000000001, Java's
//     Double.NaN 0x7FF8000000000000) do not match there; Java matches them.
//   - -0.0 and 0.0 are different values, as in iceberg-go (raw bits) and
//     Java (Double.compare / floatToIntBits).
//   - Values compare in the table schema's type: an int column written
//     before int→long promotion matches a long delete value, a float matches
//     a double of the same value, decimals match by value whatever the
//     precision, a date promoted to timestamp matches by instant.
//     iceberg-go compares the Arrow bytes of each file as stored, so after a
//     promotion its scan never matches values of the old width (a bug: the
//     spec and Java compare promoted values).
//   - A column absent from the data file reads as the field's
//     initial-default, or NULL. iceberg-go refuses such a scan ("equality
//     field ID N not found"); the spec and Java read the default.
//   - Columns resolve by Parquet field id, else through the name mapping.
//     For delete files a nil mapping falls back to the schema's own
//     names (iceberg-go does this); a data file without field ids needs a
//     mapping (iceberg-go refuses it too).

// EqualityDeleted returns the positions of data whose equality-key tuple
// (del.EqualityFieldIDs, in the types of schema) equals a row of del.
func EqualityDeleted(ctx context.Context, open Opener, data DataFile, del File, schema *iceberg.Schema, nm iceberg.NameMapping) (*roaring64.Bitmap, error) {
	out, err := equalityDeletedAll(ctx, open, data, []File{del}, schema, nm)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// eqField is an equality field of the table schema.
type eqField struct {
	field iceberg.NestedField
	t     target
}

// eqSet is the key set of one equality delete file.
type eqSet struct {
	ids  []int
	keys map[string]struct{}
}

// equalityDeletedAll computes the per-pair bitmaps of data and each of
// dels with one pass over the data file.
func equalityDeletedAll(ctx context.Context, open Opener, data DataFile, dels []File, sch *iceberg.Schema, nm iceberg.NameMapping) ([]*roaring64.Bitmap, error) {
	if sch == nil {
		return nil, perr.New(perr.InvalidArgument, "equality deletes for %s: no table schema", data.Path)
	}
	fields := schemaFields(sch)
	want := map[int]eqField{}
	sets := make([]eqSet, len(dels))
	for _, del := range dels {
		if err := checkReadable(del, EqualityDeletes); err != nil {
			return nil, err
		}
		if len(del.EqualityFieldIDs) == 0 {
			return nil, perr.New(perr.InvalidArgument, "equality deletes %s: no equality field ids", del.Path)
		}
		for _, id := range del.EqualityFieldIDs {
			if _, ok := want[id]; ok {
				continue
			}
			f, err := equalityField(fields, id)
			if err != nil {
				return nil, fmt.Errorf("equality deletes %s: %w", del.Path, err)
			}
			want[id] = f
		}
	}
	for i, del := range dels {
		delNM := nm
		if delNM == nil {
			delNM = sch.NameMapping()
		}
		keys, err := readDeleteKeys(ctx, open, del, want, delNM)
		if err != nil {
			return nil, err
		}
		sets[i] = eqSet{ids: del.EqualityFieldIDs, keys: keys}
	}

	out := make([]*roaring64.Bitmap, len(dels))
	var ids []int // field ids the data pass reads
	for i := range out {
		out[i] = roaring64.New()
		if len(sets[i].keys) > 0 {
			for _, id := range sets[i].ids {
				if !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	if err := matchDataFile(ctx, open, data, ids, want, nm, sets, out); err != nil {
		return nil, err
	}
	return out, nil
}

// readDeleteKeys reads the key tuples of an equality delete file.
func readDeleteKeys(ctx context.Context, open Opener, del File, fields map[int]eqField, nm iceberg.NameMapping) (_ map[string]struct{}, err error) {
	pf, err := openParquet(ctx, open, del.Path, del.Size)
	if err != nil {
		return nil, err
	}
	defer guard(del.Path, &err)
	cm := mapColumns(pf.rd.MetaData().Schema, nm)
	leaves := make([]*leaf, len(del.EqualityFieldIDs))
	for i, id := range del.EqualityFieldIDs {
		l, err := cm.find(del.Path, id, "equality")
		if err != nil {
			return nil, err
		}
		if l == nil {
			return nil, perr.New(perr.Corrupt, "equality deletes %s: no column for equality field id %d (%s)", del.Path, id, fields[id].field.Name)
		}
		leaves[i] = l
	}
	keys := map[string]struct{}{}
	md := pf.rd.MetaData()
	var key []byte
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		cols, err := keyCols(pf, rg, del.EqualityFieldIDs, leaves, fields, nil)
		if err != nil {
			return nil, err
		}
		n := md.RowGroup(rg).NumRows()
		for row := int64(0); row < n; row++ {
			if row&4095 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			key = key[:0]
			for j, c := range cols {
				if key, err = c.appendNext(key); err != nil {
					return nil, classify(pf.sr, err, "equality deletes %s: row group %d row %d field %d", del.Path, rg, row, del.EqualityFieldIDs[j])
				}
			}
			keys[string(key)] = struct{}{}
		}
	}
	return keys, nil
}

// keyCols opens the key columns of row group rg; a nil leaf is an absent
// column, read as consts[i].
func keyCols(pf *parquetFile, rg int, ids []int, leaves []*leaf, fields map[int]eqField, consts [][]byte) ([]keyCol, error) {
	rgr := pf.rd.RowGroup(rg)
	cols := make([]keyCol, len(ids))
	for i, id := range ids {
		if leaves[i] == nil {
			cols[i] = constCol(consts[i])
			continue
		}
		ccr, err := rgr.Column(leaves[i].index)
		if err != nil {
			return nil, classify(pf.sr, err, "%s: row group %d column %s", pf.path, rg, leaves[i].col.Path())
		}
		c, err := newKeyCol(ccr, leaves[i].col, fields[id].t)
		if err != nil {
			return nil, fmt.Errorf("%s: field %d: %w", pf.path, id, err)
		}
		cols[i] = c
	}
	return cols, nil
}

// matchDataFile reads the key columns ids of the data file and adds each
// row whose tuple is in sets[i] to out[i].
func matchDataFile(ctx context.Context, open Opener, data DataFile, ids []int, fields map[int]eqField, nm iceberg.NameMapping,
	sets []eqSet, out []*roaring64.Bitmap) (err error) {
	pf, err := openParquet(ctx, open, data.Path, data.Size)
	if err != nil {
		return err
	}
	defer guard(data.Path, &err)
	md := pf.rd.MetaData()
	if data.RecordCount > 0 && md.NumRows != data.RecordCount {
		return perr.New(perr.FailedPrecondition, "data file %s has %d rows, the manifest says %d", data.Path, md.NumRows, data.RecordCount)
	}
	cm := mapColumns(md.Schema, nm)
	if !cm.hasIDs && len(nm) == 0 {
		return perr.New(perr.FailedPrecondition, "data file %s has no Parquet field ids and the table has no name mapping: its equality columns cannot be identified", data.Path)
	}
	leaves := make([]*leaf, len(ids))
	consts := make([][]byte, len(ids))
	for i, id := range ids {
		if leaves[i], err = cm.find(data.Path, id, "equality"); err != nil {
			return err
		}
		if leaves[i] == nil {
			if consts[i], err = defaultEncoding(fields[id].field, fields[id].t); err != nil {
				return fmt.Errorf("data file %s lacks equality column %d: %w", data.Path, id, err)
			}
		}
	}
	// setCols[s] are the positions in ids of set s's fields, in its order.
	setCols := make([][]int, len(sets))
	for s, set := range sets {
		if len(set.keys) == 0 {
			continue
		}
		for _, id := range set.ids {
			setCols[s] = append(setCols[s], slices.Index(ids, id))
		}
	}
	enc := make([][]byte, len(ids))
	var key []byte
	var pos uint64
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		cols, err := keyCols(pf, rg, ids, leaves, fields, consts)
		if err != nil {
			return err
		}
		n := md.RowGroup(rg).NumRows()
		for row := int64(0); row < n; row, pos = row+1, pos+1 {
			if row&4095 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			for j, c := range cols {
				if enc[j], err = c.appendNext(enc[j][:0]); err != nil {
					return classify(pf.sr, err, "data file %s: row group %d row %d field %d", data.Path, rg, row, ids[j])
				}
			}
			for s, sc := range setCols {
				if sc == nil {
					continue
				}
				key = key[:0]
				for _, j := range sc {
					key = append(key, enc[j]...)
				}
				if _, ok := sets[s].keys[string(key)]; ok {
					out[s].Add(pos)
				}
			}
		}
	}
	return nil
}

// fieldInfo is a schema field and whether it sits inside a list or map.
type fieldInfo struct {
	field        iceberg.NestedField
	inCollection bool
}

func schemaFields(s *iceberg.Schema) map[int]fieldInfo {
	out := map[int]fieldInfo{}
	var walk func(fs []iceberg.NestedField, inColl bool)
	var walkType func(t iceberg.Type, inColl bool)
	walkType = func(t iceberg.Type, inColl bool) {
		switch x := t.(type) {
		case *iceberg.StructType:
			walk(x.FieldList, inColl)
		case *iceberg.ListType:
			walk([]iceberg.NestedField{x.ElementField()}, true)
		case *iceberg.MapType:
			walk([]iceberg.NestedField{x.KeyField(), x.ValueField()}, true)
		}
	}
	walk = func(fs []iceberg.NestedField, inColl bool) {
		for _, f := range fs {
			out[f.ID] = fieldInfo{field: f, inCollection: inColl}
			walkType(f.Type, inColl)
		}
	}
	walk(s.Fields(), false)
	return out
}

// equalityField checks that id names a primitive field usable as an
// equality key.
func equalityField(fields map[int]fieldInfo, id int) (eqField, error) {
	fi, ok := fields[id]
	if !ok {
		return eqField{}, perr.New(perr.InvalidArgument, "equality field id %d is not in the table schema", id)
	}
	if fi.inCollection {
		return eqField{}, perr.New(perr.FailedPrecondition, "equality field %d (%s) is inside a list or map", id, fi.field.Name)
	}
	if _, ok := fi.field.Type.(iceberg.PrimitiveType); !ok {
		return eqField{}, perr.New(perr.InvalidArgument, "equality field %d (%s) is a %s, not a primitive", id, fi.field.Name, fi.field.Type)
	}
	t, err := targetOf(fi.field.Type)
	if err != nil {
		return eqField{}, fmt.Errorf("field %d (%s): %w", id, fi.field.Name, err)
	}
	return eqField{field: fi.field, t: t}, nil
}

// equalityFingerprint names what besides the two files' bytes an
// equality per-pair result depends on: each key field's type and
// initial-default, and the names the name mapping gives it.
func equalityFingerprint(sch *iceberg.Schema, nm iceberg.NameMapping, ids []int) string {
	var b strings.Builder
	fields := map[int]fieldInfo{}
	if sch != nil {
		fields = schemaFields(sch)
	}
	mapped := map[int][]string{}
	var walk func(fs []iceberg.MappedField, prefix string)
	walk = func(fs []iceberg.MappedField, prefix string) {
		for _, f := range fs {
			if f.FieldID != nil {
				for _, n := range f.Names {
					mapped[*f.FieldID] = append(mapped[*f.FieldID], prefix+n)
				}
			}
			for _, n := range f.Names {
				walk(f.Fields, prefix+n+".")
			}
		}
	}
	walk(nm, "")
	for _, id := range ids {
		fi := fields[id]
		b.WriteString(strconv.Itoa(id))
		b.WriteByte(':')
		if sch != nil {
			name, _ := sch.FindColumnName(id) // delete files without field ids resolve by it
			b.WriteString(strconv.Quote(name))
		}
		b.WriteByte(':')
		if fi.field.Type != nil {
			b.WriteString(fi.field.Type.String())
		}
		fmt.Fprintf(&b, ":%#v:%q;", fi.field.InitialDefault, mapped[id])
	}
	return b.String()
}
