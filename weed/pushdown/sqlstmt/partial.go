package sqlstmt

// Partial aggregates: the same grouping and accumulators as agg.go, run
// next to the data on a volume server over one file's matching rows
// (Partials), answered as one Arrow record of partial states, a row per
// group, and merged here into the query's groups (Aggregator.addPartials):
//
//	volume: rows ─▶ Partials.Add (agg.go's grouping) ─▶ Partials.Record
//	        g0…gk (keys) │ n<i> count │ s<i> int sum, b<i> its decimal text
//	        past 64 bits, f<i> float sum │ v<i> MIN/MAX ─▶ Arrow IPC
//	caller: partial record ─▶ keys ─▶ groups (keyCoder: NULL its own group,
//	        NaNs one group, strings by bytes) ─▶ accumulators merged
//
// COUNT(DISTINCT) has no partial state here: such statements are read and
// aggregated in the caller.

import (
	"fmt"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// PartialAgg is one aggregate computed as partial states: Func over its
// argument column, or COUNT(*) when HasArg is false.
type PartialAgg struct {
	Func   Func
	HasArg bool
}

// Partials groups one file's rows and keeps each group's partial states.
type Partials struct {
	a *Aggregator
}

// NewPartials aggregates records whose columns are the groupBy grouping
// columns, then one argument column per aggregate that has one, in
// order; more than maxGroups groups (0: MaxGroups) is RESOURCE_EXHAUSTED.
func NewPartials(groupBy int, aggs []PartialAgg, maxGroups int) (*Partials, error) {
	st := &Statement{Aggregate: true}
	var columns []string
	for j := range groupBy {
		name := fmt.Sprintf("g%d", j)
		st.GroupBy = append(st.GroupBy, name)
		columns = append(columns, name)
	}
	for i, ag := range aggs {
		switch ag.Func {
		case Count, Sum, Min, Max, Avg:
		default:
			return nil, perr.New(perr.InvalidArgument, "aggregate %d: %s has no partial state", i, perr.Quote(string(ag.Func)))
		}
		if !ag.HasArg && ag.Func != Count {
			return nil, perr.New(perr.InvalidArgument, "aggregate %d: %s needs a column", i, ag.Func)
		}
		it := Item{Name: fmt.Sprintf("a%d", i), Agg: &Agg{Func: ag.Func}}
		if ag.HasArg {
			it.Agg.Column = fmt.Sprintf("x%d", i)
			columns = append(columns, it.Agg.Column)
		}
		st.Items = append(st.Items, it)
	}
	a := NewAggregator(st, columns)
	a.maxGroups = maxGroups
	return &Partials{a: a}, nil
}

// Add folds rec's rows into the groups.
func (p *Partials) Add(rec arrow.RecordBatch) error {
	if rec.NumCols() != int64(len(p.a.columns)) {
		return perr.New(perr.Internal, "partial aggregation: %d columns for %d expected", rec.NumCols(), len(p.a.columns))
	}
	return p.a.Add(rec)
}

// Groups is the number of groups so far.
func (p *Partials) Groups() int { return len(p.a.groups) }

// Record is the groups' partial states, a row per group (no GROUP BY:
// exactly one row, even over no rows). sch is the schema of the records
// added (needed when none was).
func (p *Partials) Record(sch *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, error) {
	a := p.a
	if err := a.Init(sch); err != nil {
		return nil, err
	}
	if len(a.groupAt) == 0 && len(a.groups) == 0 {
		a.newGroup(nil, nil)
	}
	var fields []arrow.Field
	var builders []array.Builder
	add := func(name string, t arrow.DataType) array.Builder {
		fields = append(fields, arrow.Field{Name: name, Type: t, Nullable: true})
		b := array.NewBuilder(mem, t)
		builders = append(builders, b)
		return b
	}
	defer func() {
		for _, b := range builders {
			b.Release()
		}
	}()
	keys := make([]array.Builder, len(a.groupAt))
	for j, at := range a.groupAt {
		keys[j] = add(fmt.Sprintf("g%d", j), a.types[at])
	}
	type states struct{ n, s, b, f, v array.Builder }
	accs := make([]states, len(a.st.Items))
	for i, it := range a.st.Items {
		accs[i].n = add(fmt.Sprintf("n%d", i), arrow.PrimitiveTypes.Int64)
		switch it.Agg.Func {
		case Sum, Avg:
			accs[i].s = add(fmt.Sprintf("s%d", i), arrow.PrimitiveTypes.Int64)
			accs[i].b = add(fmt.Sprintf("b%d", i), arrow.BinaryTypes.String)
			accs[i].f = add(fmt.Sprintf("f%d", i), arrow.PrimitiveTypes.Float64)
		case Min, Max:
			accs[i].v = add(fmt.Sprintf("v%d", i), a.types[a.argAt[i]])
		}
	}
	for _, g := range a.groups {
		for j, b := range keys {
			if err := appendVal(b, g.keys[j], g.present[j]); err != nil {
				return nil, perr.New(perr.InvalidArgument, "GROUP BY key: %v are not supported", err)
			}
		}
		for i := range a.st.Items {
			ac, st := &g.accs[i], accs[i]
			st.n.(*array.Int64Builder).Append(ac.n)
			if st.s != nil {
				st.s.(*array.Int64Builder).Append(ac.i)
				if ac.big != nil {
					st.b.(*array.StringBuilder).Append(ac.big.String())
				} else {
					st.b.AppendNull()
				}
				st.f.(*array.Float64Builder).Append(ac.f)
			}
			if st.v != nil {
				if err := appendVal(st.v, ac.v, ac.n > 0); err != nil {
					return nil, perr.New(perr.InvalidArgument, "%s: %v are not supported", a.st.Items[i].Agg, err)
				}
			}
		}
	}
	cols := make([]arrow.Array, len(builders))
	for i, b := range builders {
		cols[i] = b.NewArray()
		defer cols[i].Release()
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(len(a.groups))), nil
}

// PartialAggs are st's aggregates as partial states, in item order, and
// whether every one has one (no COUNT(DISTINCT)).
func PartialAggs(st *Statement) ([]PartialAgg, bool) {
	var out []PartialAgg
	for _, it := range st.Items {
		if it.Agg == nil {
			continue
		}
		if it.Agg.Distinct {
			return nil, false
		}
		out = append(out, PartialAgg{Func: it.Agg.Func, HasArg: it.Agg.Column != ""})
	}
	return out, true
}

// addPartials merges a record of partial states (Partials.Record, made
// for PartialAggs(a.st)) into a's groups. a must be initialized with the
// read schema.
func (a *Aggregator) AddPartials(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	sch := rec.Schema()
	col := func(name string) (arrow.Array, error) {
		idx := sch.FieldIndices(name)
		if len(idx) != 1 {
			return nil, perr.New(perr.Corrupt, "partial aggregates: column %s is missing", name)
		}
		return rec.Column(idx[0]), nil
	}
	keyCols := make([]arrow.Array, len(a.columns))
	for j, at := range a.groupAt {
		c, err := col(fmt.Sprintf("g%d", j))
		if err != nil {
			return err
		}
		keyCols[at] = c
	}
	var gids []int32
	if len(a.groupAt) == 0 {
		if len(a.groups) == 0 {
			a.newGroup(nil, nil)
		}
		gids = make([]int32, n)
	} else {
		var err error
		if gids, err = a.groupIDs(func(at int) arrow.Array { return keyCols[at] }, n); err != nil {
			return err
		}
	}
	p := -1 // the partial's aggregate index
	for i, it := range a.st.Items {
		if it.Agg == nil {
			continue
		}
		p++
		if err := a.mergeItem(i, p, it.Agg, col, gids); err != nil {
			return err
		}
	}
	return nil
}

// mergeItem merges the partial states of aggregate p into item i.
func (a *Aggregator) mergeItem(i, p int, agg *Agg, col func(string) (arrow.Array, error), gids []int32) error {
	c, err := col(fmt.Sprintf("n%d", p))
	if err != nil {
		return err
	}
	counts, ok := c.(*array.Int64)
	if !ok || counts.NullN() > 0 {
		return perr.New(perr.Corrupt, "partial aggregates: n%d is %s with %d NULLs, want int64 without", p, c.DataType(), c.NullN())
	}
	switch agg.Func {
	case Count:
		for r, g := range gids {
			a.groups[g].accs[i].n += counts.Value(r)
		}
	case Sum, Avg:
		cs, err1 := col(fmt.Sprintf("s%d", p))
		cb, err2 := col(fmt.Sprintf("b%d", p))
		cf, err3 := col(fmt.Sprintf("f%d", p))
		if err := firstErr(err1, err2, err3); err != nil {
			return err
		}
		ints, ok1 := cs.(*array.Int64)
		bigs, ok2 := cb.(*array.String)
		floats, ok3 := cf.(*array.Float64)
		if !ok1 || !ok2 || !ok3 {
			return perr.New(perr.Corrupt, "partial aggregates: the sum states of aggregate %d have the wrong types", p)
		}
		for r, g := range gids {
			ac := &a.groups[g].accs[i]
			ac.n += counts.Value(r)
			ac.f += floats.Value(r)
			addInt(ac, ints.Value(r))
			if bigs.IsValid(r) {
				b, ok := new(big.Int).SetString(bigs.Value(r), 10)
				if !ok {
					return perr.New(perr.Corrupt, "partial aggregates: sum %s is not an integer", perr.Quote(bigs.Value(r)))
				}
				// the state's int64 part is not counted when it overflowed
				b.Sub(b, big.NewInt(ints.Value(r)))
				if ac.big == nil {
					ac.big = big.NewInt(ac.i)
				}
				ac.big.Add(ac.big, b)
			}
		}
	case Min, Max:
		cv, err := col(fmt.Sprintf("v%d", p))
		if err != nil {
			return err
		}
		get, err := getterOf(cv)
		if err != nil {
			return perr.New(perr.Corrupt, "partial aggregates: %s: %v", agg, err)
		}
		for r, g := range gids {
			ac := &a.groups[g].accs[i]
			v, ok := get(r)
			if ok && counts.Value(r) > 0 {
				c := compareVals(v, ac.v)
				if ac.n == 0 || (agg.Func == Min && c < 0) || (agg.Func == Max && c > 0) {
					ac.v = kept(v)
				}
			}
			ac.n += counts.Value(r)
		}
	default:
		return perr.New(perr.Internal, "partial aggregates: %s has no partial state", agg)
	}
	return nil
}

// addInt adds x to an integer sum, moving to big.Int past int64.
func addInt(ac *acc, x int64) {
	if ac.big != nil {
		ac.big.Add(ac.big, big.NewInt(x))
	} else if s := ac.i + x; (x > 0 && s < ac.i) || (x < 0 && s > ac.i) {
		ac.big = new(big.Int).Add(big.NewInt(ac.i), big.NewInt(x))
	} else {
		ac.i = s
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Merge adds a record of partial states (as Record makes them, e.g. from
// a row group's statistics) to the groups; sch is the schema of the
// records Add takes.
func (p *Partials) Merge(sch *arrow.Schema, states arrow.RecordBatch) error {
	if err := p.a.Init(sch); err != nil {
		return err
	}
	return p.a.AddPartials(states)
}

// AppendInt appends the integer v (a date, time or timestamp in its
// Arrow unit) to a builder of an integer-backed type.
func AppendInt(b array.Builder, v int64) error {
	return appendVal(b, intVal(v), true)
}
