package tableimport

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// Object kinds, as the summary counts them.
const (
	KindMetadata         = "metadata"
	KindManifestList     = "manifest list"
	KindManifest         = "manifest"
	KindData             = "data"
	KindPositionDeletes  = "position deletes"
	KindDeletionVectors  = "deletion vectors"
	KindEqualityDeletes  = "equality deletes"
	KindStatistics       = "statistics"
	maxProblemsInMessage = 20
)

// Object is one file the import puts into the warehouse.
type Object struct {
	Key       string // object key in the warehouse bucket
	Source    string // local file holding its bytes (original or rewritten)
	Size      int64
	Kind      string
	Rewritten bool // content differs from the source folder's file
}

// Plan is a checked, rewritten table ready to upload: every file it names
// exists, every path is under the prefix, and the rewritten files sit in a
// staging folder until Close.
type Plan struct {
	SourceDir        string
	MetadataFile     string // source metadata file imported as current
	MetadataReason   string // why that one
	SourcePrefix     string // prefix stripped from source paths
	Location         string // table location in the warehouse
	Bucket           string
	MetadataLocation string // rewritten current metadata, to register
	FormatVersion    int
	Snapshots        int
	PathsRewritten   int
	Objects          []Object
	Unreferenced     int      // files in the folder no metadata names (not copied)
	SkippedSnapshots int      // unreadable snapshots left out (SkipUnreadableSnapshots)
	Notes            []string // things the user should know (skipped history files...)
	staging          string
}

// Bytes is the total size of the objects.
func (p *Plan) Bytes() int64 {
	var n int64
	for _, o := range p.Objects {
		n += o.Size
	}
	return n
}

// CountByKind counts objects per kind.
func (p *Plan) CountByKind() map[string]int {
	m := map[string]int{}
	for _, o := range p.Objects {
		m[o.Kind]++
	}
	return m
}

// Close removes the staged rewritten files.
func (p *Plan) Close() error {
	if p == nil || p.staging == "" {
		return nil
	}
	return os.RemoveAll(p.staging)
}

// ProblemsError lists everything wrong with a source table; nothing is
// imported when there is any.
type ProblemsError struct {
	Problems []string
	Hint     string // how to import anyway, when there is a way
}

func (e *ProblemsError) Error() string {
	shown := e.Problems
	more := ""
	if len(shown) > maxProblemsInMessage {
		more = fmt.Sprintf("\n  ... and %d more", len(shown)-maxProblemsInMessage)
		shown = shown[:maxProblemsInMessage]
	}
	hint := ""
	if e.Hint != "" {
		hint = "\n" + e.Hint
	}
	return fmt.Sprintf("refusing to import: %d problem(s) in the source table, nothing was imported:\n  %s%s%s",
		len(e.Problems), strings.Join(shown, "\n  "), more, hint)
}

// PrepareOptions say what to prepare.
type PrepareOptions struct {
	Dir          string // local table folder
	StripPrefix  string // prefix of the written paths that is Dir; "" = the metadata's location
	MetadataFile string // "" = version-hint.text, else the newest
	Location     string // new table location: s3://bucket/path
	// AllowSizeMismatch imports files whose size differs from what their
	// manifest entry says (noted, not refused). Readers that trust the
	// manifest's size (to find a Parquet footer) may fail on them.
	AllowSizeMismatch bool
	// SkipUnreadableSnapshots leaves out (with a note) the snapshots whose
	// manifest list, or a manifest it names, is missing or does not decode,
	// instead of refusing the table. The current snapshot and branch heads
	// must still be readable.
	SkipUnreadableSnapshots bool
}

// sourceFile is one distinct file the table names.
type sourceFile struct {
	orig   string // path as first seen in the metadata
	rel    string // below the prefix
	local  string // in the folder; "" when missing
	size   int64
	kind   string
	needed bool // a live entry or a metadata reference needs it
	// manifests: the file's entries need the content-rewritten sizes first
	declaredSize int64
}

type preparer struct {
	o        PrepareOptions
	rl       *relocator
	plan     *Plan
	problems []string
	seenProb map[string]bool
	files    map[string]*sourceFile // by rel
	order    []string
}

func (p *preparer) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !p.seenProb[msg] {
		p.seenProb[msg] = true
		p.problems = append(p.problems, msg)
	}
}

// Prepare checks the source table and writes its rewritten files to a
// staging folder. On any problem it returns a *ProblemsError and stages
// nothing.
func Prepare(o PrepareOptions) (*Plan, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("table folder %s: not a directory", o.Dir)
	}
	o.Dir = dir
	if o.MetadataFile != "" && !filepath.IsAbs(o.MetadataFile) {
		if _, err := os.Stat(o.MetadataFile); err == nil && !fileExists(filepath.Join(dir, o.MetadataFile)) && !fileExists(filepath.Join(dir, "metadata", o.MetadataFile)) {
			o.MetadataFile, _ = filepath.Abs(o.MetadataFile)
		}
	}
	bucket, keyPrefix, ok := splitS3Location(o.Location)
	if !ok {
		return nil, fmt.Errorf("table location %q: want s3://bucket/path", o.Location)
	}
	mdPath, reason, err := chooseMetadata(dir, o.MetadataFile)
	if err != nil {
		return nil, err
	}
	raw, err := readMetadataBytes(mdPath)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", mdPath, err)
	}
	docAny, err := parseJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s is not JSON: %w", mdPath, err)
	}
	doc, ok := docAny.(*jsonObject)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON object", mdPath)
	}
	if _, err := table.ParseMetadataBytes(raw); err != nil {
		return nil, fmt.Errorf("%s is not valid Iceberg table metadata: %w", mdPath, err)
	}
	prefix := o.StripPrefix
	if prefix == "" {
		loc, _ := doc.getString("location")
		if prefix, err = inferPrefix(loc); err != nil {
			return nil, err
		}
	}
	p := &preparer{
		o:        o,
		rl:       newRelocator(prefix, o.Location),
		seenProb: map[string]bool{},
		files:    map[string]*sourceFile{},
		plan: &Plan{SourceDir: dir, MetadataFile: mdPath, MetadataReason: reason, SourcePrefix: normalizePath(prefix),
			Location: strings.TrimSuffix(o.Location, "/"), Bucket: bucket},
	}
	if err := p.run(doc, mdPath, keyPrefix); err != nil {
		p.plan.Close()
		return nil, err
	}
	return p.plan, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func splitS3Location(loc string) (bucket, key string, ok bool) {
	rest, found := strings.CutPrefix(loc, "s3://")
	if !found {
		return "", "", false
	}
	bucket, key, _ = strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	return bucket, key, bucket != "" && key != ""
}

// note adds a source file (by its path in the metadata) to the import.
func (p *preparer) note(orig, kind, context string, needed bool, declaredSize int64) *sourceFile {
	rel, err := p.rl.relative(orig)
	if err != nil {
		p.problem("%s: %v", context, err)
		return nil
	}
	if rel == "" {
		p.problem("%s: path %q names the table root, not a file", context, orig)
		return nil
	}
	if f, ok := p.files[rel]; ok {
		if needed && !f.needed {
			f.needed = true
			if f.local == "" {
				p.problem("%s: %s file %q is missing from %s", context, kind, orig, p.o.Dir)
			}
		}
		return f
	}
	f := &sourceFile{orig: orig, rel: rel, kind: kind, needed: needed, declaredSize: declaredSize}
	local, st, err := localFile(p.o.Dir, rel)
	switch {
	case err == nil:
		f.local, f.size = local, st.Size()
		if needed && declaredSize > 0 && declaredSize != f.size && p.o.AllowSizeMismatch {
			p.plan.Notes = append(p.plan.Notes, fmt.Sprintf("%s: %s file %q is %d bytes but its manifest entry says %d (imported as is)", context, kind, orig, f.size, declaredSize))
		} else if needed && declaredSize > 0 && declaredSize != f.size {
			p.problem("%s: %s file %q is %d bytes in the folder but its manifest entry says %d", context, kind, orig, f.size, declaredSize)
		}
	case needed:
		p.problem("%s: %s file %q is missing from %s (looked for %s)", context, kind, orig, p.o.Dir, local)
	}
	p.files[rel] = f
	p.order = append(p.order, rel)
	return f
}

func (p *preparer) run(doc *jsonObject, mdPath, keyPrefix string) error {
	plan := p.plan
	unreadable := p.unreadableSnapshots(doc)
	if p.o.SkipUnreadableSnapshots && len(unreadable) > 0 {
		p.dropSnapshots(doc, unreadable)
	}
	refusal := func() error {
		e := &ProblemsError{Problems: p.problems}
		if !p.o.SkipUnreadableSnapshots && len(unreadable) > 0 && !p.currentUnreadable(doc, unreadable) {
			e.Hint = fmt.Sprintf("%d snapshot(s) cannot be read but the current one can: %s imports the readable snapshots and notes the others", len(unreadable), SkipUnreadableFlag)
		}
		return e
	}
	refs, n := rewriteMetadataDoc(doc, p.rl, func(what, path string, err error) {
		p.problem("metadata %s: %v", what, err)
	})
	plan.PathsRewritten += n
	plan.FormatVersion, plan.Snapshots = refs.formatVersion, refs.snapshots
	if _, err := p.rl.relative(refs.location); err != nil {
		plan.Notes = append(plan.Notes, fmt.Sprintf("the metadata's location %q is not under the prefix %q; the table's location becomes %s", refs.location, p.rl.srcPrefix, plan.Location))
	}

	// Manifest lists and the manifests they name.
	var manifestOrder []string
	manifests := map[string]*avroFile{}
	manifestOf := map[string]*sourceFile{}
	lists := map[string]*avroFile{}
	var listOrder []string
	addManifest := func(orig, context string) {
		f := p.note(orig, KindManifest, context, true, 0)
		if f == nil || f.local == "" {
			return
		}
		if _, done := manifestOf[f.rel]; done {
			return
		}
		manifestOf[f.rel] = f
		af, err := readAvroPath(f.local)
		if err != nil {
			p.problem("manifest %q: %v", orig, err)
			return
		}
		manifests[f.rel] = af
		manifestOrder = append(manifestOrder, f.rel)
	}
	for _, ml := range refs.manifestLists {
		f := p.note(ml, KindManifestList, "snapshot", true, 0)
		if f == nil || f.local == "" {
			continue
		}
		if _, done := lists[f.rel]; done {
			continue
		}
		af, err := readAvroPath(f.local)
		if err != nil {
			p.problem("manifest list %q: %v", ml, err)
			continue
		}
		lists[f.rel] = af
		listOrder = append(listOrder, f.rel)
		mrefs, err := listManifests(af)
		if err != nil {
			p.problem("manifest list %q: %v", ml, err)
			continue
		}
		for _, m := range mrefs {
			addManifest(m.path, fmt.Sprintf("manifest list %q", ml))
		}
	}
	for _, m := range refs.manifests {
		addManifest(m, "v1 snapshot")
	}

	// Data and delete files.
	for _, rel := range manifestOrder {
		mf := manifestOf[rel]
		entries, err := manifestEntries(manifests[rel])
		if err != nil {
			p.problem("manifest %q: %v", mf.orig, err)
			continue
		}
		for _, e := range entries {
			kind := KindData
			switch e.content {
			case contentPositionDelete:
				kind = KindPositionDeletes
				if e.format == "PUFFIN" {
					kind = KindDeletionVectors
				} else if e.format != "PARQUET" && e.live() {
					p.problem("manifest %q: position-delete file %q is %s; only Parquet position deletes and Puffin deletion vectors can be rewritten", mf.orig, e.path, e.format)
				}
			case contentEqualityDelete:
				kind = KindEqualityDeletes
			}
			p.note(e.path, kind, fmt.Sprintf("manifest %q", mf.orig), e.live(), e.size)
			if e.referenced != "" {
				if _, err := p.rl.relative(e.referenced); err != nil {
					p.problem("manifest %q: referenced_data_file of %q: %v", mf.orig, e.path, err)
				}
			}
		}
	}
	for _, s := range refs.statistics {
		p.note(s, KindStatistics, "metadata statistics", true, 0)
	}

	// Previous metadata files: history, not needed to read any snapshot; a
	// missing one is noted, not refused.
	type previousMetadata struct {
		f   *sourceFile
		doc *jsonObject
	}
	var previous []previousMetadata
	for _, pm := range refs.previous {
		f := p.note(pm, KindMetadata, "metadata-log", false, 0)
		if f == nil {
			continue
		}
		if f.local == "" {
			plan.Notes = append(plan.Notes, fmt.Sprintf("previous metadata file %q is not in the folder; its metadata-log entry is kept (rewritten) without the file", pm))
			continue
		}
		if same, _ := filepath.Abs(f.local); same == mdPath {
			continue
		}
		b, err := readMetadataBytes(f.local)
		if err != nil {
			p.problem("previous metadata file %q: %v", pm, err)
			continue
		}
		d, err := parseJSON(b)
		obj, ok := d.(*jsonObject)
		if err != nil || !ok {
			p.problem("previous metadata file %q is not a JSON object", pm)
			continue
		}
		_, n := rewriteMetadataDoc(obj, p.rl, func(what, path string, err error) {
			p.problem("previous metadata file %q, %s: %v", pm, what, err)
		})
		plan.PathsRewritten += n
		previous = append(previous, previousMetadata{f: f, doc: obj})
	}
	if len(p.problems) > 0 {
		return refusal()
	}

	// Everything is there: rewrite into the staging folder.
	staging, err := os.MkdirTemp("", "lakeweed-import-*")
	if err != nil {
		return err
	}
	plan.staging = staging
	key := func(rel string) string { return keyPrefix + "/" + rel }
	stage := func(rel string) (string, *os.File, error) {
		dst := filepath.Join(staging, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", nil, err
		}
		out, err := os.Create(dst)
		return dst, out, err
	}
	stageBytes := func(rel string, b []byte) (string, error) {
		dst, out, err := stage(rel)
		if err != nil {
			return "", err
		}
		if _, err := out.Write(b); err != nil {
			out.Close()
			return "", err
		}
		return dst, out.Close()
	}

	// Delete files whose content names data files.
	rewritten := map[string]rewrittenDeleteFile{} // by original path spelling(s)
	for _, rel := range p.order {
		f := p.files[rel]
		if f.local == "" || (f.kind != KindPositionDeletes && f.kind != KindDeletionVectors) {
			continue
		}
		if f.kind == KindDeletionVectors {
			puffin, err := startsWithPuffinMagic(f.local)
			if err != nil {
				p.problem("%s file %q: %v", f.kind, f.orig, err)
				continue
			}
			if !puffin {
				// An older writer's deletion vector outside any Puffin
				// container: no footer, so no referenced-data-file to
				// move. Its bytes go as they are (see the copy loop).
				plan.Notes = append(plan.Notes, bareDeletionVectorNote(f.orig))
				continue
			}
		}
		dst, out, err := stage(rel)
		if err != nil {
			return err
		}
		var rw rewrittenDeleteFile
		var n int
		if f.kind == KindPositionDeletes {
			rw.lowerPath, rw.upperPath, n, err = rewritePositionDeletes(f.local, out, p.rl)
		} else {
			n, err = rewritePuffin(f.local, out, p.rl)
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			p.problem("%s file %q: %v", f.kind, f.orig, err)
			continue
		}
		st, err := os.Stat(dst)
		if err != nil {
			return err
		}
		rw.size = st.Size()
		plan.PathsRewritten += n
		rewritten[rel] = rw
		plan.Objects = append(plan.Objects, Object{Key: key(rel), Source: dst, Size: rw.size, Kind: f.kind, Rewritten: true})
	}
	if len(p.problems) > 0 {
		return refusal()
	}
	// Manifest entries name files by their own spelling; map each spelling.
	bySpelling := func(orig string) (rewrittenDeleteFile, bool) {
		rel, err := p.rl.relative(orig)
		if err != nil {
			return rewrittenDeleteFile{}, false
		}
		rw, ok := rewritten[rel]
		return rw, ok
	}

	manifestSize := map[string]int64{}
	for _, rel := range manifestOrder {
		af := manifests[rel]
		spellings := map[string]rewrittenDeleteFile{}
		for _, r := range af.records {
			rec := r.(map[string]any)
			df := unionValue(rec["data_file"]).(map[string]any)
			fp, _ := asString(df["file_path"])
			if rw, ok := bySpelling(fp); ok {
				// Bounds are only replaced where the entry had them.
				if _, has := boundFor(df, "lower_bounds", posDeleteFilePathFieldID); !has {
					rw.lowerPath, rw.upperPath = nil, nil
				}
				spellings[fp] = rw
			}
		}
		n, err := rewriteManifest(af, p.rl, spellings)
		if err != nil {
			p.problem("manifest %q: %v", manifestOf[rel].orig, err)
			continue
		}
		plan.PathsRewritten += n
		b, err := af.encode()
		if err != nil {
			p.problem("manifest %q: %v", manifestOf[rel].orig, err)
			continue
		}
		dst, err := stageBytes(rel, b)
		if err != nil {
			return err
		}
		manifestSize[rel] = int64(len(b))
		plan.Objects = append(plan.Objects, Object{Key: key(rel), Source: dst, Size: int64(len(b)), Kind: KindManifest, Rewritten: true})
	}
	for _, rel := range listOrder {
		af := lists[rel]
		n, err := rewriteManifestList(af, p.rl, func(orig string) (int64, bool) {
			mrel, err := p.rl.relative(orig)
			if err != nil {
				return 0, false
			}
			s, ok := manifestSize[mrel]
			return s, ok
		})
		if err != nil {
			p.problem("manifest list %q: %v", p.files[rel].orig, err)
			continue
		}
		plan.PathsRewritten += n
		b, err := af.encode()
		if err != nil {
			p.problem("manifest list %q: %v", p.files[rel].orig, err)
			continue
		}
		dst, err := stageBytes(rel, b)
		if err != nil {
			return err
		}
		plan.Objects = append(plan.Objects, Object{Key: key(rel), Source: dst, Size: int64(len(b)), Kind: KindManifestList, Rewritten: true})
	}
	if len(p.problems) > 0 {
		return refusal()
	}

	// Files copied byte for byte.
	for _, rel := range p.order {
		f := p.files[rel]
		if f.local == "" {
			continue
		}
		switch f.kind {
		case KindData, KindEqualityDeletes, KindStatistics:
			plan.Objects = append(plan.Objects, Object{Key: key(rel), Source: f.local, Size: f.size, Kind: f.kind})
		case KindDeletionVectors:
			if _, staged := rewritten[rel]; !staged {
				plan.Objects = append(plan.Objects, Object{Key: key(rel), Source: f.local, Size: f.size, Kind: f.kind})
			}
		}
	}

	// Metadata files, current last.
	for _, pm := range previous {
		b, err := encodeJSON(pm.doc)
		if err != nil {
			return err
		}
		rel := metadataDestRel(pm.f.rel)
		dst, err := stageBytes(rel, b)
		if err != nil {
			return err
		}
		plan.Objects = append(plan.Objects, Object{Key: key(rel), Source: dst, Size: int64(len(b)), Kind: KindMetadata, Rewritten: true})
	}
	b, err := encodeJSON(doc)
	if err != nil {
		return err
	}
	if _, err := table.ParseMetadataBytes(b); err != nil {
		return fmt.Errorf("the rewritten metadata does not parse as Iceberg metadata (a bug in the import): %w", err)
	}
	mdRel := "metadata/" + metadataDestName(filepath.Base(mdPath))
	if srcRel, err := filepath.Rel(p.o.Dir, mdPath); err == nil && !strings.HasPrefix(srcRel, "..") {
		mdRel = metadataDestRel(filepath.ToSlash(srcRel))
	}
	dst, err := stageBytes(mdRel, b)
	if err != nil {
		return err
	}
	plan.Objects = append(plan.Objects, Object{Key: key(mdRel), Source: dst, Size: int64(len(b)), Kind: KindMetadata, Rewritten: true})
	plan.MetadataLocation = plan.Location + "/" + mdRel

	// Deduplicate keys (a file named under two spellings), last wins.
	seen := map[string]int{}
	var objs []Object
	for _, o := range plan.Objects {
		if i, ok := seen[o.Key]; ok {
			objs[i] = o
			continue
		}
		seen[o.Key] = len(objs)
		objs = append(objs, o)
	}
	plan.Objects = objs
	plan.Unreferenced = p.countUnreferenced(mdPath)
	return nil
}

// countUnreferenced counts regular files in the folder that the import
// leaves behind (orphans, version hints, writer catalogs, history files).
func (p *preparer) countUnreferenced(mdPath string) int {
	used := map[string]bool{mdPath: true}
	for _, f := range p.files {
		if f.local != "" {
			used[f.local] = true
		}
	}
	n := 0
	_ = filepath.WalkDir(p.o.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() && !used[path] {
			n++
		}
		return nil
	})
	return n
}

func readAvroPath(p string) (*avroFile, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return readAvroFile(b)
}

// sortedKinds lists kinds in a stable order for summaries.
func sortedKinds(m map[string]int) []string {
	order := []string{KindMetadata, KindManifestList, KindManifest, KindData, KindPositionDeletes, KindDeletionVectors, KindEqualityDeletes, KindStatistics}
	var out []string
	for _, k := range order {
		if m[k] > 0 {
			out = append(out, k)
		}
	}
	var rest []string
	for k := range m {
		found := false
		for _, o := range order {
			if o == k {
				found = true
			}
		}
		if !found {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}
