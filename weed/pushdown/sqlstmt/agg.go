package sqlstmt

// Grouping and aggregates over streamed records: one hash map from the
// group's key bytes to its accumulators; a query without GROUP BY is one
// group (and COUNT(*) alone adds record lengths).
//
//	record ─▶ getters of the grouping and argument columns
//	       ─▶ per row: key bytes ─▶ group ─▶ each aggregate's accumulator
//	finish ─▶ HAVING per group ─▶ one Arrow record, a row a group

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
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

type Aggregator struct {
	st      *Statement
	columns []string // the columns read, in record order
	inited  bool
	types   []arrow.DataType // per read column (dictionary unwrapped)
	groupAt []int            // per GROUP BY column: its read column
	argAt   []int            // per item: its aggregate's read column (-1: COUNT(*) or a grouping column)
	keyAt   []int            // per item that is a grouping column: its position in GROUP BY
	groups  []*group
	index   map[string]int32 // codes of 3+ grouping columns → group
	byCodes map[uint64]int32 // codes of 1 or 2 grouping columns → group
	// dense is byCodes as a table of denseRows × denseCols cells (-1: no
	// group yet), while that is small (denseGroupIDs)
	dense                []int32
	denseRows, denseCols int
	coders               []*keyCoder // per GROUP BY column
	codes                [][]int32   // per GROUP BY column: this record's codes
	gids                 []int32     // this record's group per row
	key                  []byte
	// maxGroups bounds the groups (0: MaxGroups)
	maxGroups int
	// per group of a record (foldIntsDense): its integer sum's 128 bits,
	// its rows, its extreme
	sumLo          []uint64
	sumHi, cnt, ex []int64
}

func NewAggregator(st *Statement, columns []string) *Aggregator {
	return &Aggregator{st: st, columns: columns, index: map[string]int32{}}
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
func (a *Aggregator) Init(sch *arrow.Schema) error {
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

func (a *Aggregator) newGroup(keys []val, present []bool) *group {
	g := &group{keys: keys, present: present, accs: make([]acc, len(a.st.Items))}
	for i, it := range a.st.Items {
		if it.Agg != nil && it.Agg.Distinct {
			g.accs[i].set = map[string]struct{}{}
		}
	}
	a.groups = append(a.groups, g)
	return g
}

// add folds a record into the groups: each grouping column's values
// become small codes (one map per column, values kept once), the codes a
// group id per row, then each aggregate runs over its column with the
// group ids (typed loops for int64 and float64 columns).
func (a *Aggregator) Add(rec arrow.RecordBatch) error {
	if err := a.Init(rec.Schema()); err != nil {
		return err
	}
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	gids, err := a.groupIDs(rec.Column, n)
	if err != nil {
		return err
	}
	for j, it := range a.st.Items {
		if it.Agg == nil {
			continue
		}
		if err := a.updateColumn(j, it.Agg, rec, gids, n); err != nil {
			return err
		}
	}
	return nil
}

// keyCoder numbers the distinct values of one grouping column.
type keyCoder struct {
	strs    map[string]int32
	ints    map[int64]int32
	floats  map[uint64]int32
	null    int32 // code of NULL, -1 until seen
	values  []val
	present []bool
}

func newKeyCoder() *keyCoder {
	return &keyCoder{strs: map[string]int32{}, ints: map[int64]int32{}, floats: map[uint64]int32{}, null: -1}
}

func (k *keyCoder) add(v val, ok bool) int32 {
	c := int32(len(k.values))
	k.values, k.present = append(k.values, v), append(k.present, ok)
	return c
}

// codes writes the code of each row of col into out.
func (k *keyCoder) codes(col arrow.Array, out []int32) error {
	nulls := col.NullN() > 0
	if s, ok := col.(*array.String); ok {
		for i := range out {
			if nulls && s.IsNull(i) {
				out[i] = k.nullCode()
				continue
			}
			v := s.Value(i)
			c, seen := k.strs[v]
			if !seen {
				c = k.add(val{k: kStr, s: strings.Clone(v)}, true)
				k.strs[strings.Clone(v)] = c
			}
			out[i] = c
		}
		return nil
	}
	if d, ok := col.(*array.Dictionary); ok {
		return k.dictionaryCodes(d, out, nulls)
	}
	get, err := getterOf(col)
	if err != nil {
		return err
	}
	for i := range out {
		v, ok := get(i)
		if !ok {
			out[i] = k.nullCode()
			continue
		}
		var c int32
		var seen bool
		switch v.k {
		case kStr:
			if c, seen = k.strs[v.s]; !seen {
				v.s = strings.Clone(v.s)
				c = k.add(v, true)
				k.strs[v.s] = c
			}
		case kFloat:
			bits := math.Float64bits(v.f)
			if math.IsNaN(v.f) {
				bits = math.Float64bits(math.NaN())
			} else if v.f == 0 {
				bits = 0
			}
			if c, seen = k.floats[bits]; !seen {
				c = k.add(v, true)
				k.floats[bits] = c
			}
		default:
			if c, seen = k.ints[v.i]; !seen {
				c = k.add(v, true)
				k.ints[v.i] = c
			}
		}
		out[i] = c
	}
	return nil
}

// dictionaryCodes codes a dictionary-encoded column by its dictionary
// indices: each dictionary entry is coded once (by value, so entries of
// other dictionaries with equal values share the code), each row is a
// lookup of its index.
func (k *keyCoder) dictionaryCodes(d *array.Dictionary, out []int32, nulls bool) error {
	dict := d.Dictionary()
	byIndex := make([]int32, dict.Len())
	if err := k.codes(dict, byIndex); err != nil {
		return err
	}
	if ix, ok := d.Indices().(*array.Int32); ok && !nulls {
		for i, x := range ix.Int32Values() { // pqarrow's dictionaries: int32 indices
			out[i] = byIndex[x]
		}
		return nil
	}
	for i := range out {
		if nulls && d.IsNull(i) {
			out[i] = k.nullCode()
			continue
		}
		out[i] = byIndex[d.GetValueIndex(i)]
	}
	return nil
}

func (k *keyCoder) nullCode() int32 {
	if k.null < 0 {
		k.null = k.add(val{}, false)
	}
	return k.null
}

// groupIDs is the group of each row (new groups made as met); column
// gives the read columns' arrays (only the grouping ones are asked for).
func (a *Aggregator) groupIDs(column func(int) arrow.Array, n int) ([]int32, error) {
	gids := a.gids[:0]
	if cap(gids) < n {
		gids = make([]int32, n)
	}
	gids = gids[:n]
	a.gids = gids
	if len(a.groupAt) == 0 {
		if len(a.groups) == 0 {
			a.newGroup(nil, nil)
		}
		clear(gids)
		return gids, nil
	}
	if a.coders == nil {
		for range a.groupAt {
			a.coders = append(a.coders, newKeyCoder())
		}
		a.byCodes = map[uint64]int32{}
	}
	for len(a.codes) < len(a.groupAt) {
		a.codes = append(a.codes, nil)
	}
	for j, at := range a.groupAt {
		if cap(a.codes[j]) < n {
			a.codes[j] = make([]int32, n)
		}
		a.codes[j] = a.codes[j][:n]
		if err := a.coders[j].codes(column(at), a.codes[j]); err != nil {
			return nil, perr.New(perr.InvalidArgument, "SQL: GROUP BY %s: %v are not supported", perr.Quote(a.st.GroupBy[j]), err)
		}
	}
	if len(a.codes) <= 2 && a.denseGroupIDs(gids, n) {
		return gids, nil
	}
	for r := 0; r < n; r++ {
		var gi int32
		var ok bool
		if len(a.codes) <= 2 {
			key := uint64(uint32(a.codes[0][r]))
			if len(a.codes) == 2 {
				key = key<<32 | uint64(uint32(a.codes[1][r]))
			}
			gi, ok = a.byCodes[key]
			if !ok {
				if gi, ok = a.makeGroup(r); !ok {
					return nil, perr.New(perr.ResourceExhausted, "SQL: GROUP BY makes more than %d groups", a.groupLimit())
				}
				a.byCodes[key] = gi
			}
		} else {
			key := a.key[:0]
			for _, c := range a.codes {
				key = binary.LittleEndian.AppendUint32(key, uint32(c[r]))
			}
			a.key = key
			gi, ok = a.index[string(key)]
			if !ok {
				if gi, ok = a.makeGroup(r); !ok {
					return nil, perr.New(perr.ResourceExhausted, "SQL: GROUP BY makes more than %d groups", a.groupLimit())
				}
				a.index[string(key)] = gi
			}
		}
		gids[r] = gi
	}
	return gids, nil
}

// maxDense bounds the cells of the dense group table (the product of the
// grouping columns' distinct values so far).
const maxDense = 1 << 16

// denseGroupIDs numbers the rows' groups of one or two grouping columns
// through a table indexed by their codes (no hashing), while the codes'
// product is at most maxDense; false (nothing done) past it. The table
// is rebuilt from byCodes when a column's codes outgrow it.
func (a *Aggregator) denseGroupIDs(gids []int32, n int) bool {
	n0, n1 := len(a.coders[0].values), 1
	if len(a.codes) == 2 {
		n1 = len(a.coders[1].values)
	}
	if n0*n1 > maxDense {
		return false
	}
	if a.denseRows != n0 || a.denseCols != n1 {
		// codes are numbered from 0 as met, so a grown table keeps every
		// old pair: refill it from the map
		a.dense = slices.Grow(a.dense[:0], n0*n1)[:n0*n1]
		for i := range a.dense {
			a.dense[i] = -1
		}
		for key, gi := range a.byCodes {
			c0, c1 := int(key), 0
			if len(a.codes) == 2 {
				c0, c1 = int(key>>32), int(uint32(key))
			}
			a.dense[c0*n1+c1] = gi
		}
		a.denseRows, a.denseCols = n0, n1
	}
	codes0 := a.codes[0][:n]
	var codes1 []int32
	if len(a.codes) == 2 {
		codes1 = a.codes[1][:n]
	}
	for r, c0 := range codes0 {
		cell := int(c0) * n1
		key := uint64(uint32(c0))
		if codes1 != nil {
			cell += int(codes1[r])
			key = key<<32 | uint64(uint32(codes1[r]))
		}
		gi := a.dense[cell]
		if gi < 0 {
			var ok bool
			if gi, ok = a.makeGroup(r); !ok {
				return false // the row loop reports the limit
			}
			a.byCodes[key] = gi
			a.dense[cell] = gi
		}
		gids[r] = gi
	}
	return true
}

// makeGroup adds the group of row r's codes.
func (a *Aggregator) makeGroup(r int) (int32, bool) {
	if len(a.groups) >= a.groupLimit() {
		return 0, false
	}
	keys, present := make([]val, len(a.codes)), make([]bool, len(a.codes))
	for j, c := range a.codes {
		keys[j], present[j] = a.coders[j].values[c[r]], a.coders[j].present[c[r]]
	}
	a.newGroup(keys, present)
	return int32(len(a.groups) - 1), true
}

func (a *Aggregator) groupLimit() int {
	if a.maxGroups > 0 {
		return a.maxGroups
	}
	return MaxGroups
}

// updateColumn folds item j's aggregate over rec's rows into their groups.
func (a *Aggregator) updateColumn(j int, agg *Agg, rec arrow.RecordBatch, gids []int32, n int) error {
	if a.argAt[j] < 0 { // COUNT(*)
		for _, g := range gids {
			a.groups[g].accs[j].n++
		}
		return nil
	}
	col := rec.Column(a.argAt[j])
	nulls := col.NullN() > 0
	if !agg.Distinct {
		switch x := col.(type) {
		case *array.Int64:
			v := x.Int64Values()
			if !nulls {
				a.foldInts(j, agg.Func, v, gids)
				return nil
			}
			for r, g := range gids {
				if nulls && x.IsNull(r) {
					continue
				}
				a.foldInt(&a.groups[g].accs[j], agg.Func, v[r])
			}
			return nil
		case *array.Float64:
			v := x.Float64Values()
			for r, g := range gids {
				if nulls && x.IsNull(r) {
					continue
				}
				a.foldFloat(&a.groups[g].accs[j], agg.Func, v[r])
			}
			return nil
		}
	}
	get, err := getterOf(col)
	if err != nil {
		return perr.New(perr.InvalidArgument, "SQL: %s: %v are not supported here", agg, err)
	}
	for r := 0; r < n; r++ {
		if err := a.update(&a.groups[gids[r]].accs[j], agg, get, r); err != nil {
			return err
		}
	}
	return nil
}

// denseFoldGroups bounds the groups foldIntsDense folds a record into
// through arrays of its own.
const denseFoldGroups = 1 << 12

// foldInts is foldInt over rows with no NULL, the function chosen once.
func (a *Aggregator) foldInts(j int, f Func, v []int64, gids []int32) {
	if ng := len(a.groups); ng <= denseFoldGroups && ng <= len(gids) && (f == Sum || f == Avg || f == Min || f == Max) {
		a.foldIntsDense(j, f, v, gids, ng)
		return
	}
	switch f {
	case Sum, Avg:
		for r, g := range gids {
			ac := &a.groups[g].accs[j]
			addInt(ac, v[r])
			ac.n++
		}
	case Min:
		for r, g := range gids {
			if ac := &a.groups[g].accs[j]; ac.n == 0 || v[r] < ac.v.i {
				ac.v = intVal(v[r])
				ac.n++
			} else {
				ac.n++
			}
		}
	case Max:
		for r, g := range gids {
			if ac := &a.groups[g].accs[j]; ac.n == 0 || v[r] > ac.v.i {
				ac.v = intVal(v[r])
				ac.n++
			} else {
				ac.n++
			}
		}
	default:
		for r, g := range gids {
			a.foldInt(&a.groups[g].accs[j], f, v[r])
		}
	}
}

// foldIntsDense is foldInts through one array cell a group (fewer
// groups than rows): each row adds to its group's cell — a 128-bit sum
// that cannot overflow in a record, a row count, an extreme — and each
// group's cells are then folded into its accumulator once.
func (a *Aggregator) foldIntsDense(j int, f Func, v []int64, gids []int32, ng int) {
	cnt := grown(&a.cnt, ng)
	switch f {
	case Sum, Avg:
		lo, hi := grown(&a.sumLo, ng), grown(&a.sumHi, ng)
		for r, g := range gids {
			x := v[r]
			l, carry := bits.Add64(lo[g], uint64(x), 0)
			lo[g] = l
			hi[g] += x>>63 + int64(carry)
			cnt[g]++
		}
		for g, c := range cnt {
			if c == 0 {
				continue
			}
			ac := &a.groups[g].accs[j]
			ac.n += c
			if l := int64(lo[g]); hi[g] == l>>63 {
				addInt(ac, l)
				continue
			}
			sum := new(big.Int).Lsh(big.NewInt(hi[g]), 64)
			sum.Add(sum, new(big.Int).SetUint64(lo[g]))
			if ac.big == nil {
				ac.big = big.NewInt(ac.i)
			}
			ac.big.Add(ac.big, sum)
		}
	case Min, Max:
		ex := grown(&a.ex, ng)
		if f == Min {
			for r, g := range gids {
				if x := v[r]; cnt[g] == 0 || x < ex[g] {
					ex[g] = x
				}
				cnt[g]++
			}
		} else {
			for r, g := range gids {
				if x := v[r]; cnt[g] == 0 || x > ex[g] {
					ex[g] = x
				}
				cnt[g]++
			}
		}
		for g, c := range cnt {
			if c == 0 {
				continue
			}
			ac := &a.groups[g].accs[j]
			if x := ex[g]; ac.n == 0 || (f == Min && x < ac.v.i) || (f == Max && x > ac.v.i) {
				ac.v = intVal(x)
			}
			ac.n += c
		}
	}
}

// grown is *buf as n zeroed cells, grown when it holds fewer.
func grown[T uint64 | int64](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	b := (*buf)[:n]
	clear(b)
	return b
}

func (a *Aggregator) foldInt(ac *acc, f Func, x int64) {
	switch f {
	case Sum, Avg:
		addInt(ac, x)
	case Min:
		if ac.n == 0 || x < ac.v.i {
			ac.v = intVal(x)
		}
	case Max:
		if ac.n == 0 || x > ac.v.i {
			ac.v = intVal(x)
		}
	}
	ac.n++
}

func (a *Aggregator) foldFloat(ac *acc, f Func, x float64) {
	switch f {
	case Sum, Avg:
		ac.f += x
	case Min:
		if ac.n == 0 || compareFloats(x, ac.v.f) < 0 {
			ac.v = floatVal(x)
		}
	case Max:
		if ac.n == 0 || compareFloats(x, ac.v.f) > 0 {
			ac.v = floatVal(x)
		}
	}
	ac.n++
}

func (a *Aggregator) update(ac *acc, agg *Agg, get getter, r int) error {
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
		} else {
			addInt(ac, v.i)
		}
	case agg.Func == Min:
		if ac.n == 0 || compareVals(v, ac.v) < 0 {
			ac.v = kept(v)
		}
	case agg.Func == Max:
		if ac.n == 0 || compareVals(v, ac.v) > 0 {
			ac.v = kept(v)
		}
	}
	ac.n++
	return nil
}

// kept is v as an accumulator keeps it: a string copied out of the
// record's buffer (a getter's string is a view of it, and the record's
// buffers are reused once it is released).
func kept(v val) val {
	if v.k == kStr {
		v.s = strings.Clone(v.s)
	}
	return v
}

// outputType is the Arrow type of item i's result.
func (a *Aggregator) outputType(i int) arrow.DataType {
	it := a.st.Items[i]
	if it.Agg == nil {
		return a.types[a.groupAt[a.keyAt[i]]]
	}
	var arg arrow.DataType
	if a.argAt[i] >= 0 {
		arg = a.types[a.argAt[i]]
	}
	return it.Agg.ResultType(arg)
}

// ResultType is the Arrow type of the aggregate's result over a column of
// type arg (nil for COUNT(*)): BIGINT counts, DOUBLE averages, a BIGINT
// or DOUBLE sum, MIN and MAX of the column's (undictionaried) type.
func (a Agg) ResultType(arg arrow.DataType) arrow.DataType {
	switch a.Func {
	case Count:
		return arrow.PrimitiveTypes.Int64
	case Avg:
		return arrow.PrimitiveTypes.Float64
	case Sum:
		if valueKind(plainType(arg)) == kFloat {
			return arrow.PrimitiveTypes.Float64
		}
		return arrow.PrimitiveTypes.Int64
	}
	return plainType(arg)
}

// result is item i's value for group g.
func (a *Aggregator) result(g *group, i int) (val, bool, error) {
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

// SetRowCount makes the answer one group (no GROUP BY) whose every
// aggregate is n: COUNT(*)s answered without reading (from a plan).
func (a *Aggregator) SetRowCount(n int64) {
	g := a.newGroup(nil, nil)
	for i := range g.accs {
		g.accs[i].n = n
	}
}

// Groups is the number of groups so far.
func (a *Aggregator) Groups() int { return len(a.groups) }

// Finish is the answer over the records of schema sch added: a row per
// group that HAVING keeps (no GROUP BY: exactly one, even over no rows),
// in ORDER BY's order, hidden items still in it (Cut drops them).
func (a *Aggregator) Finish(ctx context.Context, sch *arrow.Schema) (arrow.RecordBatch, error) {
	rec, err := a.finish(sch, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return sortRecord(ctx, rec, a.st.Orders)
}

// finish builds the answer: a row per group that HAVING keeps (no GROUP
// BY: exactly one row, even over no rows).
func (a *Aggregator) finish(sch *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, error) {
	if err := a.Init(sch); err != nil {
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
			if t != predicate.True {
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
