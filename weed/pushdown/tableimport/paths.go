package tableimport

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// normalizePath puts the spellings writers use for one location into a
// single form so prefixes compare: "file:/x", "file:///x" and "/x" become
// "/x"; "file://rel/x" (a relative path a writer prefixed with file://)
// becomes "rel/x"; "./x" becomes "x"; trailing slashes go. Other schemes
// (s3://, gs://, abfss://...) keep scheme and authority and have their path
// cleaned.
func normalizePath(p string) string {
	p = strings.TrimSpace(p)
	if rest, ok := strings.CutPrefix(p, "file:"); ok {
		switch {
		case strings.HasPrefix(rest, "///"):
			p = rest[2:]
		case strings.HasPrefix(rest, "//"):
			p = rest[2:]
		default:
			p = rest
		}
	}
	if scheme, rest, ok := strings.Cut(p, "://"); ok && scheme != "" && !strings.Contains(scheme, "/") {
		authority, key, _ := strings.Cut(rest, "/")
		if key == "" {
			return scheme + "://" + authority
		}
		return scheme + "://" + authority + "/" + strings.TrimPrefix(path.Clean("/"+key), "/")
	}
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

// relocator maps paths written under the source table's root onto the
// table's new root in the warehouse.
type relocator struct {
	srcPrefix string // normalized; paths must equal it or start with it + "/"
	dstRoot   string // s3://bucket/ns/name-uuid, no trailing slash
}

func newRelocator(srcPrefix, dstRoot string) *relocator {
	return &relocator{srcPrefix: normalizePath(srcPrefix), dstRoot: strings.TrimSuffix(dstRoot, "/")}
}

// relative returns p's path below the source prefix ("" for the prefix
// itself), or an error naming p when it lies elsewhere.
func (r *relocator) relative(p string) (string, error) {
	n := normalizePath(p)
	if n == r.srcPrefix {
		return "", nil
	}
	rel, ok := strings.CutPrefix(n, r.srcPrefix+"/")
	if r.srcPrefix == "." {
		// The table root is the working directory of the writer: every
		// relative path is below it.
		rel, ok = n, !strings.Contains(n, "://") && !strings.HasPrefix(n, "/")
	}
	if !ok || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("path %q is not under the table prefix %q", p, r.srcPrefix)
	}
	return rel, nil
}

// rewrite returns p moved onto the new root.
func (r *relocator) rewrite(p string) (string, error) {
	rel, err := r.relative(p)
	if err != nil {
		return "", err
	}
	if rel == "" {
		return r.dstRoot, nil
	}
	return r.dstRoot + "/" + rel, nil
}

// localFile is where the file a relative path names sits in the source
// folder. Writers that percent-encode partition values in paths (Hive style)
// sometimes keep the decoded name on disk, so the decoded spelling is tried
// when the literal one is absent.
func localFile(dir, rel string) (string, os.FileInfo, error) {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	st, err := os.Stat(p)
	if err == nil {
		if st.IsDir() {
			return p, nil, fmt.Errorf("%s is a directory", p)
		}
		return p, st, nil
	}
	if strings.Contains(rel, "%") {
		if dec, derr := url.PathUnescape(rel); derr == nil && dec != rel {
			q := filepath.Join(dir, filepath.FromSlash(dec))
			if st2, err2 := os.Stat(q); err2 == nil && !st2.IsDir() {
				return q, st2, nil
			}
		}
	}
	return p, nil, err
}

// inferPrefix picks the source prefix from the metadata's location. Writers
// sometimes record a location that names the table folder differently from
// the paths they wrote (lineitem fixtures: location "./lineitem_iceberg",
// paths "lineitem_iceberg/..."); both spellings normalize alike.
func inferPrefix(location string) (string, error) {
	n := normalizePath(location)
	if n == "" {
		return "", fmt.Errorf("the metadata has no location: pass -strip-prefix")
	}
	return n, nil
}
