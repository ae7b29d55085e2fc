package tableimport

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Metadata file names: vN.metadata.json (Hadoop tables), NNNNN-uuid.metadata.json
// (catalogs), and the gzip variants vN.gz.metadata.json / *.metadata.json.gz.
func isMetadataFileName(name string) bool {
	return strings.HasSuffix(name, ".metadata.json") || strings.HasSuffix(name, ".metadata.json.gz")
}

// metadataDestName is the name a metadata file gets in the warehouse: gzip
// variants are stored uncompressed (the REST catalog reads metadata as plain
// JSON), so their .gz marker goes.
func metadataDestName(name string) string {
	if s, ok := strings.CutSuffix(name, ".gz.metadata.json"); ok {
		return s + ".metadata.json"
	}
	if s, ok := strings.CutSuffix(name, ".metadata.json.gz"); ok {
		return s + ".metadata.json"
	}
	return name
}

func metadataDestRel(rel string) string {
	dir, name := path.Split(rel)
	return dir + metadataDestName(name)
}

var (
	hadoopVersion  = regexp.MustCompile(`^v(\d+)$`)
	catalogVersion = regexp.MustCompile(`^(\d+)-`)
)

// metadataVersion parses the version number out of a metadata file name.
func metadataVersion(name string) (int64, bool) {
	stem := strings.TrimSuffix(strings.TrimSuffix(metadataDestName(name), ".metadata.json"), ".gz")
	if m := hadoopVersion.FindStringSubmatch(stem); m != nil {
		v, err := strconv.ParseInt(m[1], 10, 64)
		return v, err == nil
	}
	if m := catalogVersion.FindStringSubmatch(stem); m != nil {
		v, err := strconv.ParseInt(m[1], 10, 64)
		return v, err == nil
	}
	return 0, false
}

// readMetadataBytes reads a metadata file, gunzipping it when it is gzip
// (by content, whatever its name says).
func readMetadataBytes(p string) ([]byte, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("gunzip %s: %w", p, err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("gunzip %s: %w", p, err)
		}
		return out, nil
	}
	return b, nil
}

// chooseMetadata picks the metadata file to import and says why: the
// -metadata flag, else version-hint.text, else the highest version number,
// else (names without versions) the newest last-updated-ms.
func chooseMetadata(dir, flagValue string) (string, string, error) {
	if flagValue != "" {
		var tries []string
		if filepath.IsAbs(flagValue) {
			tries = []string{flagValue}
		} else {
			tries = []string{filepath.Join(dir, flagValue), filepath.Join(dir, "metadata", flagValue), flagValue}
		}
		for _, p := range tries {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, "named by -metadata", nil
			}
		}
		return "", "", fmt.Errorf("metadata file %q not found (looked at %s)", flagValue, strings.Join(tries, ", "))
	}
	mdir := filepath.Join(dir, "metadata")
	entries, err := os.ReadDir(mdir)
	if err != nil {
		if os.IsNotExist(err) {
			return "", "", fmt.Errorf("%s has no metadata/ folder: not an Iceberg table folder (or pass -metadata)", dir)
		}
		return "", "", err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && isMetadataFileName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return "", "", fmt.Errorf("%s holds no *.metadata.json file", mdir)
	}
	hintNote := ""
	if hint, err := os.ReadFile(filepath.Join(mdir, "version-hint.text")); err == nil {
		h := strings.TrimSpace(string(hint))
		if p := resolveVersionHint(mdir, names, h); p != "" {
			return p, fmt.Sprintf("version-hint.text says %q", h), nil
		}
		hintNote = fmt.Sprintf("version-hint.text says %q, which names no metadata file; ", h)
	}
	allVersioned := true
	for _, n := range names {
		if _, ok := metadataVersion(n); !ok {
			allVersioned = false
		}
	}
	if allVersioned {
		sort.SliceStable(names, func(i, j int) bool {
			vi, _ := metadataVersion(names[i])
			vj, _ := metadataVersion(names[j])
			if vi != vj {
				return vi < vj
			}
			return modTime(filepath.Join(mdir, names[i])) < modTime(filepath.Join(mdir, names[j]))
		})
		best := names[len(names)-1]
		v, _ := metadataVersion(best)
		return filepath.Join(mdir, best), hintNote + fmt.Sprintf("highest version (%d) of %d metadata files", v, len(names)), nil
	}
	type candidate struct {
		name    string
		updated int64
		mtime   int64
	}
	var cands []candidate
	for _, n := range names {
		p := filepath.Join(mdir, n)
		c := candidate{name: n, updated: -1, mtime: modTime(p)}
		if b, err := readMetadataBytes(p); err == nil {
			if doc, err := parseJSON(b); err == nil {
				if obj, ok := doc.(*jsonObject); ok {
					if v, ok := obj.get("last-updated-ms"); ok {
						if num, ok := v.(json.Number); ok {
							c.updated, _ = num.Int64()
						}
					}
				}
			}
		}
		cands = append(cands, c)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].updated != cands[j].updated {
			return cands[i].updated < cands[j].updated
		}
		return cands[i].mtime < cands[j].mtime
	})
	best := cands[len(cands)-1]
	return filepath.Join(mdir, best.name), hintNote + fmt.Sprintf("newest last-updated-ms (%d) of %d metadata files, not all of them numbered", best.updated, len(names)), nil
}

func resolveVersionHint(mdir string, names []string, hint string) string {
	if hint == "" {
		return ""
	}
	want := []string{hint, hint + ".metadata.json", hint + ".gz.metadata.json", hint + ".metadata.json.gz"}
	if _, err := strconv.ParseInt(hint, 10, 64); err == nil {
		want = append(want, "v"+hint+".metadata.json", "v"+hint+".gz.metadata.json", "v"+hint+".metadata.json.gz")
	}
	for _, w := range want {
		for _, n := range names {
			if n == w {
				return filepath.Join(mdir, n)
			}
		}
	}
	if v, err := strconv.ParseInt(hint, 10, 64); err == nil {
		for _, n := range names {
			if nv, ok := metadataVersion(n); ok && nv == v {
				return filepath.Join(mdir, n)
			}
		}
	}
	return ""
}

func modTime(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.ModTime().UnixNano()
}

// Properties naming where writers put new files; they are moved with the
// table so that later writes land in the warehouse too.
var pathProperties = []string{"write.data.path", "write.metadata.path", "write.object-storage.path", "write.folder-storage.path"}

// metadataRefs are the files a metadata document names.
type metadataRefs struct {
	manifestLists []string // snapshots[].manifest-list
	manifests     []string // v1 snapshots[].manifests
	previous      []string // metadata-log[].metadata-file
	statistics    []string // statistics[] and partition-statistics[] files
	snapshots     int
	formatVersion int
	location      string
}

// rewriteMetadataDoc moves every path a table metadata document holds onto
// the new root, in place, and reports what it names. A path outside the
// prefix is reported through fail and left as it was.
func rewriteMetadataDoc(doc *jsonObject, rl *relocator, fail func(what, p string, err error)) (metadataRefs, int) {
	var refs metadataRefs
	count := 0
	move := func(what, p string, metadataFile bool) string {
		np, err := rl.rewrite(p)
		if err != nil {
			fail(what, p, err)
			return p
		}
		if metadataFile {
			dir, name := path.Split(np)
			np = dir + metadataDestName(name)
		}
		count++
		return np
	}
	if v, ok := doc.get("format-version"); ok {
		if n, ok := v.(json.Number); ok {
			fv, _ := n.Int64()
			refs.formatVersion = int(fv)
		}
	}
	if loc, ok := doc.getString("location"); ok {
		// The location is the table's root by definition: it becomes the new
		// root even when the writer recorded it differently from the paths
		// it wrote (the caller notes that).
		refs.location = loc
		np, err := rl.rewrite(loc)
		if err != nil {
			np = rl.dstRoot
		}
		doc.set("location", np)
		count++
	}
	if snaps, ok := doc.getArray("snapshots"); ok {
		refs.snapshots = len(snaps)
		for _, s := range snaps {
			snap, ok := s.(*jsonObject)
			if !ok {
				continue
			}
			if ml, ok := snap.getString("manifest-list"); ok {
				refs.manifestLists = append(refs.manifestLists, ml)
				snap.set("manifest-list", move("manifest list", ml, false))
			}
			if ms, ok := snap.getArray("manifests"); ok {
				for i, m := range ms {
					if p, ok := m.(string); ok {
						refs.manifests = append(refs.manifests, p)
						ms[i] = move("manifest", p, false)
					}
				}
			}
		}
	}
	if log, ok := doc.getArray("metadata-log"); ok {
		for _, e := range log {
			entry, ok := e.(*jsonObject)
			if !ok {
				continue
			}
			if p, ok := entry.getString("metadata-file"); ok {
				refs.previous = append(refs.previous, p)
				entry.set("metadata-file", move("previous metadata file", p, true))
			}
		}
	}
	for _, key := range []string{"statistics", "partition-statistics"} {
		if stats, ok := doc.getArray(key); ok {
			for _, e := range stats {
				entry, ok := e.(*jsonObject)
				if !ok {
					continue
				}
				if p, ok := entry.getString("statistics-path"); ok {
					refs.statistics = append(refs.statistics, p)
					entry.set("statistics-path", move(key+" file", p, false))
				}
			}
		}
	}
	if props, ok := doc.getObject("properties"); ok {
		for _, key := range pathProperties {
			if p, ok := props.getString(key); ok {
				props.set(key, move("property "+key, p, false))
			}
		}
	}
	return refs, count
}
