package deletes

import (
	"bytes"
	"context"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// ReadPositionDeletes reads the positions a Parquet position delete file
// deletes from data file dataPath: only rows whose file_path equals
// dataPath contribute (a file may target many data files). Row groups whose
// file_path statistics exclude dataPath are not read. Columns resolve by
// the reserved field ids, or by the names file_path and pos when the file
// carries no field ids.
func ReadPositionDeletes(ctx context.Context, open Opener, f File, dataPath string) (_ *roaring64.Bitmap, err error) {
	if err := checkReadable(f, PositionDeletes); err != nil {
		return nil, err
	}
	if f.IsDV() {
		return nil, perr.New(perr.InvalidArgument, "position deletes %s: a deletion vector is read with ReadDV", f.Path)
	}
	pf, err := openParquet(ctx, open, f.Path, f.Size)
	if err != nil {
		return nil, err
	}
	defer guard(f.Path, &err)

	sch := pf.rd.MetaData().Schema
	cm := mapColumns(sch, nil)
	var pathLeaf, posLeaf *leaf
	if pathLeaf, err = cm.find(f.Path, filePathFieldID, "file_path"); err != nil {
		return nil, err
	}
	if posLeaf, err = cm.find(f.Path, posFieldID, "pos"); err != nil {
		return nil, err
	}
	// Files without the reserved field ids are read by column name.
	for i := 0; i < sch.NumColumns(); i++ {
		c := sch.Column(i)
		switch {
		case pathLeaf == nil && c.Path() == "file_path":
			pathLeaf = &leaf{index: i, col: c}
		case posLeaf == nil && c.Path() == "pos":
			posLeaf = &leaf{index: i, col: c}
		}
	}
	if pathLeaf == nil || posLeaf == nil {
		return nil, perr.New(perr.Corrupt, "position deletes %s: no file_path (field id %d) and pos (field id %d) columns", f.Path, filePathFieldID, posFieldID)
	}
	if t := pathLeaf.col.PhysicalType(); t != parquet.Types.ByteArray {
		return nil, perr.New(perr.Corrupt, "position deletes %s: file_path column is %s, not BYTE_ARRAY", f.Path, t)
	}
	if t := posLeaf.col.PhysicalType(); t != parquet.Types.Int64 {
		return nil, perr.New(perr.Corrupt, "position deletes %s: pos column is %s, not INT64", f.Path, t)
	}

	want := []byte(dataPath)
	out := roaring64.New()
	md := pf.rd.MetaData()
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rgm := md.RowGroup(rg)
		cc, err := rgm.ColumnChunk(pathLeaf.index)
		if err != nil {
			return nil, perr.New(perr.Corrupt, "position deletes %s: row group %d: %v", f.Path, rg, err)
		}
		if statsExclude(cc, want) {
			continue
		}
		if err := readPositionRowGroup(pf, rg, pathLeaf, posLeaf, want, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// statsExclude reports whether the chunk's min/max prove no value equals
// want. A max that may have been truncated to a prefix is only trusted
// when want does not start with it, so a truncated max cannot hide a match;
// missing or unusable statistics exclude nothing.
func statsExclude(cc *metadata.ColumnChunkMetaData, want []byte) bool {
	st, err := cc.Statistics()
	if err != nil || st == nil || !st.HasMinMax() {
		return false
	}
	bs, ok := st.(*metadata.ByteArrayStatistics)
	if !ok {
		return false
	}
	return boundsExclude(bs.Min(), bs.Max(), want)
}

// boundsExclude reports whether [lo, hi] excludes want, trusting hi only
// where it cannot be a truncated prefix of want.
func boundsExclude(lo, hi, want []byte) bool {
	if bytes.Compare(want, lo) < 0 {
		return true
	}
	return bytes.Compare(want, hi) > 0 && !bytes.HasPrefix(want, hi)
}

func readPositionRowGroup(pf *parquetFile, rg int, pathLeaf, posLeaf *leaf, want []byte, out *roaring64.Bitmap) error {
	rgr := pf.rd.RowGroup(rg)
	n := rgr.NumRows()
	pr, err := rgr.Column(pathLeaf.index)
	if err != nil {
		return classify(pf.sr, err, "position deletes %s: row group %d file_path", pf.path, rg)
	}
	qr, err := rgr.Column(posLeaf.index)
	if err != nil {
		return classify(pf.sr, err, "position deletes %s: row group %d pos", pf.path, rg)
	}
	paths := newColumn[parquet.ByteArray](pr.(*file.ByteArrayColumnChunkReader), pathLeaf.col.MaxDefinitionLevel(), batchRows)
	poss := newColumn[int64](qr.(*file.Int64ColumnChunkReader), posLeaf.col.MaxDefinitionLevel(), batchRows)
	for row := int64(0); row < n; row++ {
		p, pnull, err := paths.next()
		if err != nil {
			return classify(pf.sr, err, "position deletes %s: row group %d row %d file_path", pf.path, rg, row)
		}
		pos, qnull, err := poss.next()
		if err != nil {
			return classify(pf.sr, err, "position deletes %s: row group %d row %d pos", pf.path, rg, row)
		}
		if pnull || qnull {
			return perr.New(perr.Corrupt, "position deletes %s: row group %d row %d has a null file_path or pos", pf.path, rg, row)
		}
		if !bytes.Equal(p, want) {
			continue
		}
		if pos < 0 {
			return perr.New(perr.Corrupt, "position deletes %s: row group %d row %d has negative pos %d", pf.path, rg, row, pos)
		}
		out.Add(uint64(pos))
	}
	return nil
}

// checkReadable refuses files this package cannot read as content c.
func checkReadable(f File, c Content) error {
	if f.Content != c {
		return perr.New(perr.InvalidArgument, "%s: holds %s, not %s", f.Path, f.Content, c)
	}
	switch f.Format {
	case FormatParquet:
		return nil
	case FormatPuffin:
		if c == PositionDeletes {
			return nil
		}
		return perr.New(perr.FailedPrecondition, "%s: %s in a PUFFIN file are not supported", f.Path, c)
	case FormatAvro, FormatORC:
		return perr.New(perr.FailedPrecondition, "%s: %s delete files are not supported (only Parquet delete files and Puffin deletion vectors)", f.Path, f.Format)
	}
	return perr.New(perr.InvalidArgument, "%s: unknown delete file format %s", f.Path, f.Format)
}
