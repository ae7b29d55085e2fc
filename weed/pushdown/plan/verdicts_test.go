package plan

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// verdictSummary is planSummary with what the tiers say about themselves.
func verdictSummary(resp *pushdown_pb.ParquetPushdownResponse) string {
	s := planSummary(resp)
	for _, t := range resp.Stats.Tiers {
		s += fmt.Sprintf(" %s:%d/%d/%d", t.Tier, t.FilesPruned, t.RowGroupsPruned, t.PagesPruned)
	}
	return s + fmt.Sprintf(" used%q missing%q sel%.6f", resp.Stats.IndexesUsed, resp.Stats.IndexesMissing, resp.Stats.EstimatedSelectivity)
}

// The footer tiers' verdicts a file state memoizes serve only the same
// predicate with the same tiers on: a plan that changes the literal, the
// operator, the negation, the field or a disabled tier right after another
// one on the same files plans exactly what a fresh planner plans.
func TestMemoizedVerdictsServeOnlyTheSamePredicateAndTiers(t *testing.T) {
	schema, mem, files := threeEqualFiles(t)
	i32 := func(op predicate.Op, n int32) predicate.Expr {
		return &predicate.Leaf{FieldID: 1, Op: op, Raw: []iceberg.Literal{iceberg.Int32Literal(n)}}
	}
	without := func(tiers ...string) Options {
		o := DefaultOptions()
		o.Disable = map[string]bool{}
		for _, t := range tiers {
			o.Disable[t] = true
		}
		return o
	}
	cases := []struct {
		name string
		e    predicate.Expr
		o    Options
	}{
		{"i32 in [100, 200]", xBetweenField(t, schema, 1, 100, 200), DefaultOptions()},
		{"i32 in [600, 700]", xBetweenField(t, schema, 1, 600, 700), DefaultOptions()},
		{"i32 >= 600", bindOrFail(t, schema, i32(predicate.OpGtEq, 600)), DefaultOptions()},
		{"i32 > 600", bindOrFail(t, schema, i32(predicate.OpGt, 600)), DefaultOptions()},
		{"NOT i32 >= 600", bindOrFail(t, schema, predicate.Not{Kid: i32(predicate.OpGtEq, 600)}), DefaultOptions()},
		{"i32 in [600, 700], no page index", xBetweenField(t, schema, 1, 600, 700), without(TierPageIndex)},
		{"i32 in [600, 700], no footer stats", xBetweenField(t, schema, 1, 600, 700), without(TierFooter)},
		{"cat = purple", bindOrFail(t, schema, eqString(19, "purple")), DefaultOptions()},
		{"cat = purple, no bloom", bindOrFail(t, schema, eqString(19, "purple")), without(TierBloom)},
		{"cat = blue", bindOrFail(t, schema, eqString(19, "blue")), DefaultOptions()},
		{"cat != purple", bindOrFail(t, schema, predicate.Not{Kid: eqString(19, "purple")}), DefaultOptions()},
		{"str = blue", bindOrFail(t, schema, eqString(5, "blue")), DefaultOptions()},
		{"cat = purple or i32 in [100, 200]", bindOrFail(t, schema, predicate.Or{Kids: []predicate.Expr{eqString(19, "purple"), xBetweenField(t, schema, 1, 100, 200)}}), DefaultOptions()},
		{"cat = purple and i32 in [100, 200]", bindOrFail(t, schema, predicate.And{Kids: []predicate.Expr{eqString(19, "purple"), xBetweenField(t, schema, 1, 100, 200)}}), DefaultOptions()},
	}
	shared := &Planner{Cache: footer.NewCache("shared", 1<<30, mem.open)}
	for round := 0; round < 3; round++ { // stored by round 1, served from round 2
		for _, c := range cases {
			req := Request{Table: Table{Schema: schema}, Files: files, Predicate: c.e, Projection: []int{1, 5, 19}, Options: c.o}
			got, _, err := shared.Plan(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			fresh := &Planner{Cache: footer.NewCache("fresh", 1<<30, mem.open)}
			want, _, err := fresh.Plan(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := verdictSummary(got), verdictSummary(want); g != w {
				t.Fatalf("round %d, %s: the shared planner planned\n%s\na fresh one\n%s", round, c.name, g, w)
			}
		}
	}
}

// Leaves that differ in anything the tiers read get different verdict
// keys; the same content bound twice gets the same one.
func TestVerdictKeysDifferWhenAnythingTheTiersReadDiffers(t *testing.T) {
	leaf := func(edit func(l *predicate.Leaf)) predicate.Expr {
		l := &predicate.Leaf{FieldID: 19, Name: "cat", Op: predicate.OpEq, Type: iceberg.PrimitiveTypes.String, Lits: []value.Value{value.OfString("blue")}}
		edit(l)
		return l
	}
	same := func(*predicate.Leaf) {}
	key := func(e predicate.Expr, o Options) uint64 {
		id, _ := verdictKeyOf(e, o)
		return id
	}
	base := key(leaf(same), DefaultOptions())
	if base == 0 {
		t.Fatal("an equality is not memoized")
	}
	if again := key(leaf(same), DefaultOptions()); again != base {
		t.Fatalf("the same leaf built twice got keys %d and %d", base, again)
	}
	noBloom := DefaultOptions()
	noBloom.Disable = map[string]bool{TierBloom: true}
	sideOff := DefaultOptions()
	sideOff.Disable = map[string]bool{TierSideIndex: true} // not a footer tier
	if k := key(leaf(same), sideOff); k != base {
		t.Fatalf("switching the side index tier off changed the key (%d, %d)", k, base)
	}
	others := map[string]uint64{
		"bloom off": key(leaf(same), noBloom),
		"field":     key(leaf(func(l *predicate.Leaf) { l.FieldID = 5 }), DefaultOptions()),
		"name":      key(leaf(func(l *predicate.Leaf) { l.Name = "str" }), DefaultOptions()),
		"type":      key(leaf(func(l *predicate.Leaf) { l.Type = iceberg.PrimitiveTypes.Binary }), DefaultOptions()),
		"op":        key(leaf(func(l *predicate.Leaf) { l.Op = predicate.OpIn }), DefaultOptions()),
		"negated":   key(leaf(func(l *predicate.Leaf) { l.Negated = true }), DefaultOptions()),
		"literal":   key(leaf(func(l *predicate.Leaf) { l.Lits = []value.Value{value.OfString("blud")} }), DefaultOptions()),
		"two literals": key(leaf(func(l *predicate.Leaf) {
			l.Lits = []value.Value{value.OfString("blue"), value.OfString("red")}
		}), DefaultOptions()),
		"or": key(predicate.Or{Kids: []predicate.Expr{leaf(same), predicate.Const{Value: false}}}, DefaultOptions()),
	}
	seen := map[uint64]string{base: "base"}
	for name, k := range others {
		if k == 0 {
			t.Fatalf("%s: not memoized", name)
		}
		if prev, dup := seen[k]; dup {
			t.Fatalf("%s and %s share verdict key %d", name, prev, k)
		}
		seen[k] = name
	}
}

// A leaf of a field the files do not store decides from the table (its
// initial default), so its verdicts are not memoized: the same predicate
// over the same files under a schema giving the field a default plans the
// default's rows.
func TestVerdictsOfAFieldTheFilesLackFollowTheTablesDefault(t *testing.T) {
	cols := genColumns()
	_, schema := genSchemas(cols)
	mem := memFiles{}
	data := writeVariant(t, cols, variants[0], 1000, 1)
	mem["s3://t/0.parquet"] = data
	files := []DataFile{{Path: "s3://t/0.parquet", Size: int64(len(data)), RecordCount: 1000}}
	added := func(def any) *iceberg.Schema {
		fields := append(schema.Fields(), iceberg.NestedField{ID: 99, Name: "added", Type: iceberg.PrimitiveTypes.String, InitialDefault: def})
		return iceberg.NewSchema(0, fields...)
	}
	pl := &Planner{Cache: footer.NewCache("t", 1<<30, mem.open)}
	for _, c := range []struct {
		name   string
		schema *iceberg.Schema
		groups int
	}{
		{"no default: every row reads NULL", added(nil), 0},
		{"default 'x': every row reads 'x'", added("x"), 1},
		{"no default again", added(nil), 0},
	} {
		req := Request{Table: Table{Schema: c.schema}, Files: files, Predicate: bindOrFail(t, c.schema, eqString(99, "x")), Projection: []int{1}, Options: DefaultOptions()}
		resp, _, err := pl.Plan(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(resp.RowGroups); got != c.groups {
			t.Fatalf("%s: %d row groups planned, want %d", c.name, got, c.groups)
		}
	}
}

// A file state keeps the verdicts of its maxFileVerdicts most recent
// stores and finds one only under its own key and side page column count.
func TestFileStateKeepsTheVerdictsOfItsMostRecentPredicates(t *testing.T) {
	s := &fileState{}
	store := func(key uint64, side int32) {
		s.storeVerdicts(&tierVerdicts{key: key, side: side, notes: &verdictNotes{}, first: RowGroupAccess{SkipTier: fmt.Sprint(key, side)}})
	}
	for k := uint64(1); k <= 6; k++ {
		store(k, 0)
	}
	store(4, 0)
	store(4, 1) // another side page count: another entry
	want := map[uint64]bool{3: false, 4: true, 5: true, 6: true, 1: false, 2: false}
	for k, found := range want {
		if got := s.verdictsOf(k, 0) != nil; got != found {
			t.Fatalf("key %d found %v, want %v", k, got, found)
		}
	}
	if v := s.verdictsOf(4, 1); v == nil || v.first.SkipTier != "4 1" {
		t.Fatalf("key 4 with one side page column: %+v", v)
	}
	if s.verdictsOf(0, 0) != nil {
		t.Fatal("key 0 (not memoized) found verdicts")
	}
}

// A predicate's first plan memoizes nothing (point lookups of a new value
// each plan would only fill memory); its second does, its third copies.
func TestVerdictsAreMemoizedFromAPredicatesSecondPlanOn(t *testing.T) {
	schema, mem, files := threeEqualFiles(t)
	pl := &Planner{Cache: footer.NewCache("t", 1<<30, mem.open)}
	req := Request{Table: Table{Schema: schema}, Files: files, Predicate: bindOrFail(t, schema, eqString(19, "a value no other test plans")), Projection: []int{1}, Options: DefaultOptions()}
	for plan, want := range []bool{false, true, true} {
		_, plans, err := pl.Plan(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		key, _ := verdictKeyOf(req.Predicate, req.Options)
		for _, fp := range plans {
			if got := fp.state.verdictsOf(key, fp.Footer.SidePageColumns()) != nil; got != want {
				t.Fatalf("after plan %d, %s memoized %v, want %v", plan+1, fp.File.Path, got, want)
			}
		}
	}
}
