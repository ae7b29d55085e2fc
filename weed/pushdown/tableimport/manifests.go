package tableimport

import (
	"bytes"
	"fmt"
	"strings"
)

// Iceberg field ids of the position-delete columns.
const (
	posDeleteFilePathFieldID = 2147483546
	posDeletePosFieldID      = 2147483545
)

// Manifest entry content and status codes.
const (
	contentData           = 0
	contentPositionDelete = 1
	contentEqualityDelete = 2
	statusDeleted         = 2
)

// manifestRef is one manifest a manifest list names.
type manifestRef struct {
	path string // as written in the list
}

// listManifests reads the manifest paths of a manifest list.
func listManifests(f *avroFile) ([]manifestRef, error) {
	var refs []manifestRef
	for i, r := range f.records {
		rec, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("record %d is not a record", i)
		}
		p, ok := asString(rec["manifest_path"])
		if !ok {
			return nil, fmt.Errorf("record %d has no manifest_path", i)
		}
		refs = append(refs, manifestRef{path: p})
	}
	return refs, nil
}

// rewriteManifestList moves every manifest_path and sets manifest_length to
// the rewritten manifest's size.
func rewriteManifestList(f *avroFile, rl *relocator, newSize func(origPath string) (int64, bool)) (int, error) {
	rewritten := 0
	for i, r := range f.records {
		rec := r.(map[string]any)
		p, _ := asString(rec["manifest_path"])
		np, err := rl.rewrite(p)
		if err != nil {
			return rewritten, fmt.Errorf("manifest %d: %w", i, err)
		}
		setUnionOrPlain(rec, "manifest_path", np)
		rewritten++
		if size, ok := newSize(p); ok {
			if _, isLong := asInt64(rec["manifest_length"]); isLong {
				setUnionOrPlain(rec, "manifest_length", size)
			}
		}
	}
	return rewritten, nil
}

// manifestEntry is what the import needs to know about one entry of a
// manifest.
type manifestEntry struct {
	status     int64
	content    int64
	format     string
	path       string
	size       int64
	referenced string // referenced_data_file, "" when absent
}

func (e manifestEntry) live() bool { return e.status != statusDeleted }

// manifestEntries reads the entries of a manifest.
func manifestEntries(f *avroFile) ([]manifestEntry, error) {
	var out []manifestEntry
	for i, r := range f.records {
		rec, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("entry %d is not a record", i)
		}
		df, ok := unionValue(rec["data_file"]).(map[string]any)
		if !ok {
			return nil, fmt.Errorf("entry %d has no data_file", i)
		}
		e := manifestEntry{}
		e.status, _ = asInt64(rec["status"])
		e.content, _ = asInt64(df["content"]) // absent in v1: data
		e.format, _ = asString(df["file_format"])
		e.format = strings.ToUpper(e.format)
		if e.path, ok = asString(df["file_path"]); !ok {
			return nil, fmt.Errorf("entry %d has no file_path", i)
		}
		e.size, _ = asInt64(df["file_size_in_bytes"])
		e.referenced, _ = asString(df["referenced_data_file"])
		out = append(out, e)
	}
	return out, nil
}

// rewrittenDeleteFile is what rewriting a delete file's content changed.
type rewrittenDeleteFile struct {
	size int64
	// bounds of the file_path column after rewriting (position deletes in
	// Parquet); nil for Puffin files.
	lowerPath, upperPath []byte
}

// rewriteManifest moves file_path and referenced_data_file of every entry;
// for delete files whose content was rewritten it sets file_size_in_bytes
// and, where the entry has them, the file_path column bounds.
func rewriteManifest(f *avroFile, rl *relocator, rewrittenFiles map[string]rewrittenDeleteFile) (int, error) {
	count := 0
	for i, r := range f.records {
		rec := r.(map[string]any)
		df := unionValue(rec["data_file"]).(map[string]any)
		p, _ := asString(df["file_path"])
		np, err := rl.rewrite(p)
		if err != nil {
			return count, fmt.Errorf("entry %d: %w", i, err)
		}
		setUnionOrPlain(df, "file_path", np)
		count++
		if ref, ok := asString(df["referenced_data_file"]); ok {
			nref, err := rl.rewrite(ref)
			if err != nil {
				return count, fmt.Errorf("entry %d referenced_data_file: %w", i, err)
			}
			setUnionOrPlain(df, "referenced_data_file", nref)
			count++
		}
		if rw, ok := rewrittenFiles[p]; ok {
			setUnionOrPlain(df, "file_size_in_bytes", rw.size)
			if rw.lowerPath != nil {
				replaceBound(df, "lower_bounds", rw.lowerPath)
				replaceBound(df, "upper_bounds", rw.upperPath)
			}
		}
	}
	return count, nil
}

// replaceBound sets the value for the file_path field id in a metrics map
// (an Avro array of {key, value} records), when the map has that key.
func replaceBound(df map[string]any, field string, v []byte) {
	arr, ok := unionValue(df[field]).([]any)
	if !ok {
		return
	}
	for _, kv := range arr {
		m, ok := kv.(map[string]any)
		if !ok {
			continue
		}
		if k, ok := asInt64(m["key"]); ok && k == posDeleteFilePathFieldID {
			m["value"] = bytes.Clone(v)
		}
	}
}

// boundFor returns the value for a field id in a metrics map.
func boundFor(df map[string]any, field string, id int64) ([]byte, bool) {
	arr, ok := unionValue(df[field]).([]any)
	if !ok {
		return nil, false
	}
	for _, kv := range arr {
		m, ok := kv.(map[string]any)
		if !ok {
			continue
		}
		if k, ok := asInt64(m["key"]); ok && k == id {
			b, ok := unionValue(m["value"]).([]byte)
			return b, ok
		}
	}
	return nil, false
}
