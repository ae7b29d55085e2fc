package tableimport

import (
	"encoding/json"
	"fmt"
	"strings"
)

// SkipUnreadableFlag is the command-line flag that sets
// PrepareOptions.SkipUnreadableSnapshots; refusals name it.
const SkipUnreadableFlag = "-skip-unreadable-snapshots"

// skippedSnapshot is a snapshot left out of an import because its manifest
// list (or a manifest it names) cannot be read from the folder.
type skippedSnapshot struct {
	id     string // as the metadata spells it
	list   string // manifest list path below the source prefix
	reason string
}

// unreadableSnapshots finds the snapshots of doc whose manifest list, or a
// manifest that list names, is missing from the folder or does not decode.
// Paths outside the prefix are left to the main checks (they refuse).
func (p *preparer) unreadableSnapshots(doc *jsonObject) []skippedSnapshot {
	snaps, _ := doc.getArray("snapshots")
	var out []skippedSnapshot
	for _, s := range snaps {
		snap, ok := s.(*jsonObject)
		if !ok {
			continue
		}
		ml, ok := snap.getString("manifest-list")
		if !ok {
			continue
		}
		rel, err := p.rl.relative(ml)
		if err != nil || rel == "" {
			continue
		}
		id := jsonText(snap, "snapshot-id")
		if reason := p.unreadableList(rel); reason != "" {
			out = append(out, skippedSnapshot{id: id, list: rel, reason: reason})
		}
	}
	return out
}

// unreadableList says why the manifest list at rel cannot be imported, or
// "" when it and every manifest it names are readable.
func (p *preparer) unreadableList(rel string) string {
	local, _, err := localFile(p.o.Dir, rel)
	if err != nil {
		return "manifest list is missing"
	}
	af, err := readAvroPath(local)
	if err != nil {
		return "manifest list does not decode: " + err.Error()
	}
	refs, err := listManifests(af)
	if err != nil {
		return "manifest list does not decode: " + err.Error()
	}
	for _, m := range refs {
		mrel, err := p.rl.relative(m.path)
		if err != nil {
			continue
		}
		mlocal, _, err := localFile(p.o.Dir, mrel)
		if err != nil {
			return fmt.Sprintf("manifest %s is missing", mrel)
		}
		if _, err := readAvroPath(mlocal); err != nil {
			return fmt.Sprintf("manifest %s does not decode: %v", mrel, err)
		}
	}
	return ""
}

// dropSnapshots removes the skipped snapshots from doc: from snapshots,
// snapshot-log and statistics, and the tags pointing at them. The current
// snapshot and branch heads cannot be dropped: the import would then not be
// the table it was asked for, so that is a problem.
func (p *preparer) dropSnapshots(doc *jsonObject, skipped []skippedSnapshot) {
	gone := map[string]skippedSnapshot{}
	for _, s := range skipped {
		gone[s.id] = s
	}
	if cur := jsonText(doc, "current-snapshot-id"); cur != "" {
		if s, ok := gone[cur]; ok {
			p.problem("the current snapshot %s cannot be read (%s: %s); %s only leaves out older snapshots", cur, s.list, s.reason, SkipUnreadableFlag)
		}
	}
	if refs, ok := doc.getObject("refs"); ok {
		var kept []jsonMember
		for _, m := range refs.members {
			ref, ok := m.value.(*jsonObject)
			if !ok {
				kept = append(kept, m)
				continue
			}
			s, dropped := gone[jsonText(ref, "snapshot-id")]
			kind, _ := ref.getString("type")
			switch {
			case !dropped:
				kept = append(kept, m)
			case kind == "tag":
				p.plan.Notes = append(p.plan.Notes, fmt.Sprintf("tag %q pointed at left-out snapshot %s; the tag is left out too", m.key, s.id))
			default:
				p.problem("branch %q points at snapshot %s, which cannot be read (%s: %s)", m.key, s.id, s.list, s.reason)
				kept = append(kept, m)
			}
		}
		refs.members = kept
	}
	filter := func(key, idKey string) {
		arr, ok := doc.getArray(key)
		if !ok {
			return
		}
		kept := arr[:0:0]
		for _, e := range arr {
			if obj, ok := e.(*jsonObject); ok {
				if _, dropped := gone[jsonText(obj, idKey)]; dropped {
					continue
				}
			}
			kept = append(kept, e)
		}
		doc.set(key, kept)
	}
	filter("snapshots", "snapshot-id")
	filter("snapshot-log", "snapshot-id")
	filter("statistics", "snapshot-id")
	filter("partition-statistics", "snapshot-id")
	var ids []string
	for _, s := range skipped {
		ids = append(ids, fmt.Sprintf("%s (%s: %s)", s.id, s.list, s.reason))
	}
	p.plan.Notes = append(p.plan.Notes, fmt.Sprintf("left out %d unreadable snapshot(s): %s; the previous metadata files still name them",
		len(skipped), strings.Join(ids, ", ")))
	p.plan.SkippedSnapshots = len(skipped)
}

// jsonText is a scalar member's text ("" when absent or not a scalar).
func jsonText(o *jsonObject, key string) string {
	v, ok := o.get(key)
	if !ok {
		return ""
	}
	switch x := v.(type) {
	case json.Number:
		return x.String()
	case string:
		return x
	}
	return ""
}

// currentUnreadable says whether the current snapshot is among skipped.
func (p *preparer) currentUnreadable(doc *jsonObject, skipped []skippedSnapshot) bool {
	cur := jsonText(doc, "current-snapshot-id")
	for _, s := range skipped {
		if s.id == cur {
			return true
		}
	}
	return false
}
