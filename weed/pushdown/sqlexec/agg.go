package sqlexec

// Grouping and aggregates over streamed records: one hash map from the
// group's key bytes to its accumulators; a query without GROUP BY is one
// group (and COUNT(*) alone adds record lengths).
//
//	record ─▶ getters of the grouping and argument columns
//	       ─▶ per row: key bytes ─▶ group ─▶ each aggregate's accumulator
//	finish ─▶ HAVING per group ─▶ one Arrow record, a row a group

import (
	"fmt"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// MaxGroups bounds the groups one query may hold in memory.
const MaxGroups = 10_000_000

// acc accumulates one aggregate of one group.
type acc struct {
	n   int64    // rows (COUNT(*)), non-NULL values (the others)
	i   int64    // integer SUM
	big *big.Int // integer SUM once past int64
	f   float64  // float SUM
	v   val      // MIN / MAX so far (n > 0)
	set map[string]struct{}
}

type group struct {
	keys    []val
	present []bool
	accs    []acc
}

type aggregator struct {
	st      *Statement
	columns []string // the columns read, in record order
	inited  bool
	types   []arrow.DataType // per read column (dictionary unwrapped)
	groupAt []int            // per GROUP BY column: its read column
	argAt   []int            // per item: its aggregate's read column (-1: COUNT(*) or a grouping column)
	keyAt   []int            // per item that is a grouping column: its position in GROUP BY
	groups  []*group
	index   map[string]int32
	key     []byte
}

func newAggregator(st *Statement, columns []string) *aggregator {
	return &aggregator{st: st, columns: columns, index: map[string]int32{}}
}

func readColumn(columns []string, name string) int {
	for i, c := range columns {
		if c == name {
			return i
		}
	}
	return -1
}

// init checks the column types once the records' schema is known.
func (a *aggregator) init(sch *arrow.Schema) error {
	if a.inited {
		return nil
	}
	a.inited = true
	if sch.NumFields() < len(a.columns) {
		return fmt.Errorf("the read returned %d columns, %d expected", sch.NumFields(), len(a.columns))
	}
	a.types = make([]arrow.DataType, len(a.columns))
	for i := range a.columns {
		a.types[i] = plainType(sch.Field(i).Type)
	}
	for _, g := range a.st.GroupBy {
		at := readColumn(a.columns, g)
		if valueKind(a.types[at]) == kNull {
			return perr.New(perr.InvalidArgument, "SQL: GROUP BY %s: columns of type %s cannot be grouped", perr.Quote(g), a.types[at])
		}
		a.groupAt = append(a.groupAt, at)
	}
	for _, it := range a.st.Items {
		at, key := -1, -1
		if it.Agg == nil {
			for j, g := range a.st.GroupBy {
				if g == it.Column {
					key = j
				}
			}
		} else if it.Agg.Column != "" {
			at = readColumn(a.columns, it.Agg.Column)
			k := valueKind(a.types[at])
			switch {
			case k == kNull:
				return perr.New(perr.InvalidArgument, "SQL: %s: columns of type %s cannot be aggregated", it.Agg, a.types[at])
			case (it.Agg.Func == Sum || it.Agg.Func == Avg) && !numeric(a.types[at]):
				return perr.New(perr.InvalidArgument, "SQL: %s: %s is %s, not a number", it.Agg, perr.Quote(it.Agg.Column), a.types[at])
			}
		}
		a.argAt = append(a.argAt, at)
		a.keyAt = append(a.keyAt, key)
	}
	return nil
}

// numeric: SUM and AVG take integers and floats (not dates or times).
func numeric(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

func (a *aggregator) newGroup(keys []val, present []bool) *group {
	g := &group{keys: keys, present: present, accs: make([]acc, len(a.st.Items))}
	for i, it := range a.st.Items {
		if it.Agg != nil && it.Agg.Distinct {
			g.accs[i].set = map[string]struct{}{}
		}
	}
	a.groups = append(a.groups, g)
	return g
}

// add folds a record into the groups.
func (a *aggregator) add(rec arrow.RecordBatch) error {
	if err := a.init(rec.Schema()); err != nil {
		return err
	}
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	getters := make([]getter, len(a.columns))
	for i := range a.columns {
		g, err := getterOf(rec.Column(i))
		if err != nil {
			return perr.New(perr.InvalidArgument, "SQL: column %s: %v are not supported here", perr.Quote(a.columns[i]), err)
		}
		getters[i] = g
	}
	if len(a.groupAt) == 0 {
		if len(a.groups) == 0 {
			a.newGroup(nil, nil)
		}
		g := a.groups[0]
		for j, it := range a.st.Items {
			if it.Agg == nil {
				continue
			}
			if a.argAt[j] < 0 {
				g.accs[j].n += int64(n)
				continue
			}
			get := getters[a.argAt[j]]
			for r := 0; r < n; r++ {
				if err := a.update(&g.accs[j], it.Agg, get, r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	keyGetters := make([]getter, len(a.groupAt))
	for j, at := range a.groupAt {
		keyGetters[j] = getters[at]
	}
	for r := 0; r < n; r++ {
		key := a.key[:0]
		for _, get := range keyGetters {
			v, ok := get(r)
			key = appendKey(key, v, ok)
		}
		a.key = key
		gi, ok := a.index[string(key)]
		var g *group
		if ok {
			g = a.groups[gi]
		} else {
			if len(a.groups) >= MaxGroups {
				return perr.New(perr.ResourceExhausted, "SQL: GROUP BY makes more than %d groups", MaxGroups)
			}
			keys, present := make([]val, len(keyGetters)), make([]bool, len(keyGetters))
			for j, get := range keyGetters {
				keys[j], present[j] = get(r)
			}
			a.index[string(key)] = int32(len(a.groups))
			g = a.newGroup(keys, present)
		}
		for j, it := range a.st.Items {
			if it.Agg == nil {
				continue
			}
			if a.argAt[j] < 0 {
				g.accs[j].n++
				continue
			}
			if err := a.update(&g.accs[j], it.Agg, getters[a.argAt[j]], r); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *aggregator) update(ac *acc, agg *Agg, get getter, r int) error {
	v, ok := get(r)
	if !ok {
		return nil
	}
	switch {
	case agg.Distinct:
		k := appendKey(nil, v, true)
		if _, seen := ac.set[string(k)]; !seen {
			ac.set[string(k)] = struct{}{}
		}
	case agg.Func == Sum || agg.Func == Avg:
		if v.k == kFloat {
			ac.f += v.f
		} else if ac.big != nil {
			ac.big.Add(ac.big, big.NewInt(v.i))
		} else if s := ac.i + v.i; (v.i > 0 && s < ac.i) || (v.i < 0 && s > ac.i) {
			ac.big = new(big.Int).Add(big.NewInt(ac.i), big.NewInt(v.i))
		} else {
			ac.i = s
		}
	case agg.Func == Min:
		if ac.n == 0 || compareVals(v, ac.v) < 0 {
			ac.v = v
		}
	case agg.Func == Max:
		if ac.n == 0 || compareVals(v, ac.v) > 0 {
			ac.v = v
		}
	}
	ac.n++
	return nil
}

// outputType is the Arrow type of item i's result.
func (a *aggregator) outputType(i int) arrow.DataType {
	it := a.st.Items[i]
	if it.Agg == nil {
		return a.types[a.groupAt[a.keyAt[i]]]
	}
	switch it.Agg.Func {
	case Count:
		return arrow.PrimitiveTypes.Int64
	case Avg:
		return arrow.PrimitiveTypes.Float64
	case Sum:
		if valueKind(a.types[a.argAt[i]]) == kFloat {
			return arrow.PrimitiveTypes.Float64
		}
		return arrow.PrimitiveTypes.Int64
	}
	return a.types[a.argAt[i]]
}

// result is item i's value for group g.
func (a *aggregator) result(g *group, i int) (val, bool, error) {
	it := a.st.Items[i]
	if it.Agg == nil {
		k := a.keyAt[i]
		return g.keys[k], g.present[k], nil
	}
	ac := &g.accs[i]
	switch it.Agg.Func {
	case Count:
		if it.Agg.Distinct {
			return intVal(int64(len(ac.set))), true, nil
		}
		return intVal(ac.n), true, nil
	case Sum, Avg:
		if ac.n == 0 {
			return val{}, false, nil
		}
		isFloat := valueKind(a.types[a.argAt[i]]) == kFloat
		if it.Agg.Func == Avg {
			switch {
			case isFloat:
				return floatVal(ac.f / float64(ac.n)), true, nil
			case ac.big != nil:
				q, _ := new(big.Float).Quo(new(big.Float).SetInt(ac.big), big.NewFloat(float64(ac.n))).Float64()
				return floatVal(q), true, nil
			}
			return floatVal(float64(ac.i) / float64(ac.n)), true, nil
		}
		if isFloat {
			return floatVal(ac.f), true, nil
		}
		if ac.big != nil {
			return val{}, false, perr.New(perr.OutOfRange, "SQL: %s = %s does not fit a 64-bit integer", it.Agg, ac.big.String())
		}
		return intVal(ac.i), true, nil
	}
	if ac.n == 0 {
		return val{}, false, nil
	}
	return ac.v, true, nil
}

// finish builds the answer: a row per group that HAVING keeps (no GROUP
// BY: exactly one row, even over no rows).
func (a *aggregator) finish(sch *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, error) {
	if err := a.init(sch); err != nil {
		return nil, err
	}
	if len(a.groupAt) == 0 && len(a.groups) == 0 {
		a.newGroup(nil, nil)
	}
	nItems := len(a.st.Items)
	types := make([]arrow.DataType, nItems)
	fields := make([]arrow.Field, nItems)
	builders := make([]array.Builder, nItems)
	for i, it := range a.st.Items {
		types[i] = a.outputType(i)
		fields[i] = arrow.Field{Name: it.Name, Type: types[i], Nullable: !(it.Agg != nil && it.Agg.Func == Count)}
		builders[i] = array.NewBuilder(mem, types[i])
		defer builders[i].Release()
	}
	var having cond
	if h, ok := a.st.Having.(*havingExpr); ok {
		having = h.c
	}
	row, present := make([]val, nItems), make([]bool, nItems)
	for _, g := range a.groups {
		for i := range a.st.Items {
			v, ok, err := a.result(g, i)
			if err != nil {
				return nil, err
			}
			row[i], present[i] = v, ok
		}
		if having != nil {
			t, err := having.eval(row, present, types)
			if err != nil {
				return nil, err
			}
			if t != tTrue {
				continue
			}
		}
		for i := range a.st.Items {
			if err := appendVal(builders[i], row[i], present[i]); err != nil {
				return nil, perr.New(perr.InvalidArgument, "SQL: %s: %v are not supported", a.st.Items[i].Name, err)
			}
		}
	}
	cols := make([]arrow.Array, nItems)
	for i, b := range builders {
		cols[i] = b.NewArray()
		defer cols[i].Release()
	}
	rows := int64(0)
	if nItems > 0 {
		rows = int64(cols[0].Len())
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rows), nil
}
