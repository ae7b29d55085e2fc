package restplan

import (
	"bytes"
	"encoding/json"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// A request's filter is Iceberg expression JSON naming fields by name (the
// REST spec's form). It is compiled once against the scan's schema, with
// the request's case sensitivity, into
//
//	filter (names) ──resolve──▶ field-id JSON ──▶ the planner (predicate.DecodeIcebergJSON)
//	               └──────────▶ a tree of canonical names ──▶ each task's residual
//
// A task's residual is the filter with every leaf on an identity-partition
// source column replaced by its value for the file's partition (TRUE or
// FALSE under both NaN orderings), then simplified; a file whose partition
// decides the whole filter gets `true`.

// maxFilterDepth bounds the filter's nesting before anything is resolved.
const maxFilterDepth = 128

type nodeKind int

const (
	nodeConst nodeKind = iota
	nodeAnd
	nodeOr
	nodeNot
	nodeLeaf  // a predicate on one field
	nodeOther // a predicate the planner does not prune on (transforms): kept as is
)

type fnode struct {
	kind    nodeKind
	value   bool // nodeConst
	kids    []*fnode
	names   any    // the node in canonical-name JSON (leaves, others)
	idJSON  []byte // a leaf alone in field-id JSON
	fieldID int    // a leaf's field
	ftype   iceberg.Type

	bound    predicate.Expr // a leaf bound, on first use
	boundErr bool
}

type compiledFilter struct {
	ids  []byte // field-id JSON for the planner
	root *fnode
	full json.RawMessage // the whole filter in canonical names
}

// compileFilter resolves raw against schema. A name that does not resolve,
// or a malformed expression, is an InvalidArgument error quoting at most
// perr.MaxQuoted bytes of it.
func compileFilter(raw json.RawMessage, schema *iceberg.Schema, caseSensitive bool) (*compiledFilter, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, perr.New(perr.InvalidArgument, "filter is not valid JSON: %v", err)
	}
	c := &resolver{schema: schema, caseSensitive: caseSensitive}
	ids, root, err := c.node(v, 0)
	if err != nil {
		return nil, err
	}
	root.bindLeaves(schema)
	idb, err := json.Marshal(ids)
	if err != nil {
		return nil, perr.New(perr.InvalidArgument, "filter: %v", err)
	}
	full, err := json.Marshal(root.residual(nil))
	if err != nil {
		return nil, perr.New(perr.InvalidArgument, "filter: %v", err)
	}
	return &compiledFilter{ids: idb, root: root, full: full}, nil
}

type resolver struct {
	schema        *iceberg.Schema
	caseSensitive bool
}

var leafTypes = map[string]bool{
	"is-null": true, "not-null": true, "is-nan": true, "not-nan": true,
	"lt": true, "lt-eq": true, "gt": true, "gt-eq": true, "eq": true, "not-eq": true,
	"starts-with": true, "not-starts-with": true, "in": true, "not-in": true,
}

func (c *resolver) node(v any, depth int) (ids any, n *fnode, err error) {
	if depth > maxFilterDepth {
		return nil, nil, perr.New(perr.InvalidArgument, "filter nests more than %d levels", maxFilterDepth)
	}
	switch x := v.(type) {
	case bool:
		return x, &fnode{kind: nodeConst, value: x}, nil
	case map[string]any:
		typ, _ := x["type"].(string)
		switch {
		case typ == "true" || typ == "false":
			return typ == "true", &fnode{kind: nodeConst, value: typ == "true"}, nil
		case typ == "and" || typ == "or":
			li, ln, err := c.node(x["left"], depth+1)
			if err != nil {
				return nil, nil, err
			}
			ri, rn, err := c.node(x["right"], depth+1)
			if err != nil {
				return nil, nil, err
			}
			k := nodeAnd
			if typ == "or" {
				k = nodeOr
			}
			return map[string]any{"type": typ, "left": li, "right": ri}, &fnode{kind: k, kids: []*fnode{ln, rn}}, nil
		case typ == "not":
			ci, cn, err := c.node(x["child"], depth+1)
			if err != nil {
				return nil, nil, err
			}
			return map[string]any{"type": "not", "child": ci}, &fnode{kind: nodeNot, kids: []*fnode{cn}}, nil
		case leafTypes[typ]:
			idTerm, nameTerm, id, err := c.term(x["term"])
			if err != nil {
				return nil, nil, err
			}
			ids, names := map[string]any{}, map[string]any{}
			for k, val := range x {
				ids[k], names[k] = val, val
			}
			ids["term"], names["term"] = idTerm, nameTerm
			n := &fnode{kind: nodeLeaf, names: names, fieldID: id}
			if f, ok := c.schema.FindFieldByID(id); ok {
				n.ftype = f.Type
			}
			if id == 0 {
				n.kind = nodeOther
			} else if n.idJSON, err = json.Marshal(ids); err != nil {
				return nil, nil, perr.New(perr.InvalidArgument, "filter: %v", err)
			}
			return ids, n, nil
		case typ == "":
			return nil, nil, perr.New(perr.InvalidArgument, "filter: an expression object has no \"type\"")
		}
		return nil, nil, perr.New(perr.InvalidArgument, "filter: unknown expression type %s", perr.Quote(typ))
	case nil:
		return nil, nil, perr.New(perr.InvalidArgument, "filter: an expression is missing or null")
	}
	return nil, nil, perr.New(perr.InvalidArgument, "filter: unexpected %T where an expression belongs", v)
}

// term resolves a term: a field name, or a transform of one. id is 0 for a
// transform (the planner keeps such leaves as residuals).
func (c *resolver) term(v any) (ids, names any, id int, err error) {
	switch t := v.(type) {
	case string:
		f, err := c.field(t)
		if err != nil {
			return nil, nil, 0, err
		}
		name, _ := c.schema.FindColumnName(f.ID)
		return map[string]any{"type": "reference", "field-id": f.ID, "name": name}, name, f.ID, nil
	case map[string]any:
		if typ, _ := t["type"].(string); typ == "transform" {
			inner, ok := t["term"].(string)
			if !ok {
				return nil, nil, 0, perr.New(perr.InvalidArgument, "filter: a transform term needs a field name as \"term\"")
			}
			f, err := c.field(inner)
			if err != nil {
				return nil, nil, 0, err
			}
			name, _ := c.schema.FindColumnName(f.ID)
			out := map[string]any{"type": "transform", "transform": t["transform"], "term": name}
			return out, out, 0, nil
		}
		if typ, _ := t["type"].(string); typ == "reference" {
			if inner, ok := t["term"].(string); ok {
				return c.term(inner)
			}
		}
	}
	return nil, nil, 0, perr.New(perr.InvalidArgument, "filter: a term must be a field name or a transform of one")
}

func (c *resolver) field(name string) (iceberg.NestedField, error) {
	var f iceberg.NestedField
	var ok bool
	if c.caseSensitive {
		f, ok = c.schema.FindFieldByName(name)
	} else {
		f, ok = c.schema.FindFieldByNameCaseInsensitive(name)
	}
	if !ok {
		return f, perr.New(perr.InvalidArgument, "filter: no field %s in schema %d (case-sensitive: %v)", perr.Quote(name), c.schema.ID, c.caseSensitive)
	}
	return f, nil
}

// partitionValues are a file's values of identity-partition source fields
// (nil: NULL).
type partitionValues map[int]any

// residual is the filter left for a file whose identity-partition source
// fields hold vals on every row; nil vals leaves the filter whole.
func (n *fnode) residual(vals partitionValues) any {
	switch n.kind {
	case nodeConst:
		return n.value
	case nodeAnd, nodeOr:
		l, r := n.kids[0].residual(vals), n.kids[1].residual(vals)
		lb, lc := l.(bool)
		rb, rc := r.(bool)
		and := n.kind == nodeAnd
		switch {
		case lc && lb != and: // false AND x, true OR x
			return lb
		case rc && rb != and:
			return rb
		case lc: // true AND x, false OR x
			return r
		case rc:
			return l
		}
		typ := "and"
		if !and {
			typ = "or"
		}
		return map[string]any{"type": typ, "left": l, "right": r}
	case nodeNot:
		c := n.kids[0].residual(vals)
		if b, ok := c.(bool); ok {
			return !b
		}
		return map[string]any{"type": "not", "child": c}
	case nodeLeaf:
		if v, ok := vals[n.fieldID]; ok {
			if t, ok := n.decide(v); ok {
				return t
			}
		}
	}
	return n.names
}

// decide evaluates a leaf on a constant value of its field, when both NaN
// orderings give the same definite answer.
func (n *fnode) decide(v any) (bool, bool) {
	if n.bound == nil {
		return false, false
	}
	var val value.Value
	if v != nil {
		var err error
		if val, err = value.FromGo(n.ftype, v); err != nil {
			return false, false
		}
	}
	row := func(fid int) (value.Value, bool) {
		if fid != n.fieldID || v == nil {
			return value.Value{}, true
		}
		return val, false
	}
	a, b := predicate.Eval(n.bound, row, predicate.IEEE), predicate.Eval(n.bound, row, predicate.TotalOrder)
	if a != b || a == predicate.Unknown {
		return false, false
	}
	return a == predicate.True, true
}

// bindLeaves binds every leaf of the tree against schema once.
func (n *fnode) bindLeaves(schema *iceberg.Schema) {
	switch n.kind {
	case nodeLeaf:
		e, err := predicate.DecodeIcebergJSON(n.idJSON, schema)
		if err == nil {
			e, err = predicate.Bind(e, schema, predicate.DefaultLimits)
		}
		switch e.(type) {
		case *predicate.Leaf, predicate.Const:
			if err == nil {
				n.bound = e
				return
			}
		}
		n.boundErr = true
	case nodeAnd, nodeOr, nodeNot:
		for _, k := range n.kids {
			k.bindLeaves(schema)
		}
	}
}

// identityValues are the identity-partition source values of a file under
// spec, converted to the comparison domain (values that do not convert are
// left out: their leaves stay in the residual).
func identityValues(spec iceberg.PartitionSpec, partition map[int]any, schema *iceberg.Schema) partitionValues {
	var out partitionValues
	for _, pf := range spec.Fields() {
		if _, ok := pf.Transform.(iceberg.IdentityTransform); !ok {
			continue
		}
		v, ok := partition[pf.FieldID]
		if !ok {
			continue
		}
		f, ok := schema.FindFieldByID(pf.SourceID())
		if !ok {
			continue
		}
		if v != nil {
			if _, err := value.FromGo(f.Type, v); err != nil {
				continue
			}
		}
		if out == nil {
			out = partitionValues{}
		}
		out[pf.SourceID()] = v
	}
	return out
}
