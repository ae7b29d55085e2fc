package predicate

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// DecodeIcebergJSON decodes an Iceberg expression in the REST specification's
// JSON form, with one binding rule: every term must name a field by id, as
//
//	{"type": "reference", "field-id": 3}   or   {"field-id": 3}
//
// (an optional "name" is a hint for messages). A bare string term is a
// name-only reference and is refused: the client binds names to ids against
// the schema it planned with, so renames cannot change what a predicate means.
// Literals follow Iceberg's JSON single-value serialization of the field's
// type in schema s (numbers; ISO-8601 strings for dates, times and
// timestamps; decimal strings; hex for binary and fixed).
func DecodeIcebergJSON(b []byte, s *iceberg.Schema) (Expr, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, bindErr("predicate is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, bindErr("predicate JSON has trailing data")
	}
	idx := indexSchema(s)
	return decodeJSONExpr(raw, idx, 0)
}

const maxJSONDepth = 512

func decodeJSONExpr(raw any, idx map[int]fieldInfo, depth int) (Expr, error) {
	if depth > maxJSONDepth {
		return nil, bindErr("predicate JSON nests more than %d levels", maxJSONDepth)
	}
	switch v := raw.(type) {
	case bool:
		return Const{Value: v}, nil
	case map[string]any:
		typ, _ := v["type"].(string)
		switch typ {
		case "true":
			return Const{Value: true}, nil
		case "false":
			return Const{Value: false}, nil
		case "and", "or":
			l, err := decodeJSONExpr(v["left"], idx, depth+1)
			if err != nil {
				return nil, err
			}
			r, err := decodeJSONExpr(v["right"], idx, depth+1)
			if err != nil {
				return nil, err
			}
			if typ == "and" {
				return And{Kids: []Expr{l, r}}, nil
			}
			return Or{Kids: []Expr{l, r}}, nil
		case "not":
			c, err := decodeJSONExpr(v["child"], idx, depth+1)
			if err != nil {
				return nil, err
			}
			return Not{Kid: c}, nil
		case "is-null", "not-null", "is-nan", "not-nan":
			id, residual, err := decodeTerm(v["term"])
			if err != nil || residual != "" {
				return residualOr(residual, err)
			}
			op := map[string]Op{"is-null": OpIsNull, "not-null": OpIsNull, "is-nan": OpIsNaN, "not-nan": OpIsNaN}[typ]
			return &Leaf{FieldID: id, Op: op, Negated: strings.HasPrefix(typ, "not")}, nil
		case "lt", "lt-eq", "gt", "gt-eq", "eq", "not-eq", "starts-with", "not-starts-with":
			id, residual, err := decodeTerm(v["term"])
			if err != nil || residual != "" {
				return residualOr(residual, err)
			}
			op := map[string]Op{"lt": OpLt, "lt-eq": OpLtEq, "gt": OpGt, "gt-eq": OpGtEq, "eq": OpEq, "not-eq": OpEq,
				"starts-with": OpStartsWith, "not-starts-with": OpStartsWith}[typ]
			val, ok := v["value"]
			if !ok {
				return nil, bindErr("%s predicate has no \"value\"", perr.Quote(typ))
			}
			lit, err := jsonLiteral(val, id, idx)
			if err != nil {
				return nil, err
			}
			return &Leaf{FieldID: id, Op: op, Negated: strings.HasPrefix(typ, "not-"), Raw: []iceberg.Literal{lit}}, nil
		case "in", "not-in":
			id, residual, err := decodeTerm(v["term"])
			if err != nil || residual != "" {
				return residualOr(residual, err)
			}
			vals, ok := v["values"].([]any)
			if !ok {
				return nil, bindErr("%s predicate needs a \"values\" array", perr.Quote(typ))
			}
			l := &Leaf{FieldID: id, Op: OpIn, Negated: typ == "not-in"}
			for _, x := range vals {
				lit, err := jsonLiteral(x, id, idx)
				if err != nil {
					return nil, err
				}
				l.Raw = append(l.Raw, lit)
			}
			return l, nil
		case "":
			return nil, bindErr("predicate JSON object has no \"type\"")
		default:
			return Residual{Reason: fmt.Sprintf("Iceberg expression %q", typ)}, nil
		}
	case nil:
		return nil, bindErr("predicate JSON is null")
	}
	return nil, bindErr("predicate JSON: unexpected %T", raw)
}

func residualOr(reason string, err error) (Expr, error) {
	if err != nil {
		return nil, err
	}
	return Residual{Reason: reason}, nil
}

// decodeTerm returns the field id of a term, or a residual reason for terms
// (transforms) the planner does not prune on.
func decodeTerm(raw any) (id int, residual string, err error) {
	switch t := raw.(type) {
	case string:
		return 0, "", bindErr("term %s is a name-only reference; bind it to a field id first ({\"type\": \"reference\", \"field-id\": N})", perr.Quote(t))
	case map[string]any:
		if typ, _ := t["type"].(string); typ == "transform" {
			return 0, fmt.Sprintf("transform %v", t["transform"]), nil
		} else if typ != "" && typ != "reference" {
			return 0, "", bindErr("unknown term type %s", perr.Quote(typ))
		}
		n, ok := t["field-id"].(json.Number)
		if !ok {
			if name, ok := t["name"].(string); ok {
				return 0, "", bindErr("term %s has no field-id; name-only references are refused", perr.Quote(name))
			}
			return 0, "", bindErr("term has no \"field-id\"")
		}
		v, err := strconv.ParseInt(n.String(), 10, 32)
		if err != nil || v <= 0 {
			return 0, "", bindErr("term field-id %s is not a positive 32-bit integer", n)
		}
		return int(v), "", nil
	case nil:
		return 0, "", bindErr("predicate has no \"term\"")
	}
	return 0, "", bindErr("term must be an object with a field-id, got %T", raw)
}

// jsonLiteral converts a JSON value to a literal of field id's type.
func jsonLiteral(raw any, id int, idx map[int]fieldInfo) (iceberg.Literal, error) {
	fi, ok := idx[id]
	if !ok {
		return nil, bindErr("field id %d is not in the schema", id)
	}
	t := fi.field.Type
	bad := func(err error) error {
		return bindErr("literal %v for %s (%s): %v", raw, fi.path, t, err)
	}
	switch x := raw.(type) {
	case nil:
		return nil, bindErr("NULL literal for %s; use is-null", fi.path)
	case bool:
		return iceberg.BoolLiteral(x), nil
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			f, err := x.Float64()
			if err != nil {
				return nil, bad(err)
			}
			if _, isDec := t.(iceberg.DecimalType); isDec {
				return convertLiteral(iceberg.StringLiteral(x.String()), t, bad)
			}
			return iceberg.Float64Literal(f), nil
		}
		n, err := x.Int64()
		if err != nil {
			return nil, bad(err)
		}
		switch t.(type) {
		case iceberg.Float32Type, iceberg.Float64Type:
			return iceberg.Float64Literal(float64(n)), nil
		case iceberg.DecimalType:
			return convertLiteral(iceberg.StringLiteral(x.String()), t, bad)
		case iceberg.DateType:
			return iceberg.DateLiteral(n), nil
		case iceberg.TimeType:
			return iceberg.TimeLiteral(n), nil
		case iceberg.TimestampType, iceberg.TimestampTzType:
			return iceberg.TimestampLiteral(n), nil
		case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			return iceberg.TimestampNsLiteral(n), nil
		}
		return iceberg.Int64Literal(n), nil
	case string:
		switch tt := t.(type) {
		case iceberg.StringType:
			return iceberg.StringLiteral(x), nil
		case iceberg.BinaryType, iceberg.FixedType:
			b, err := hex.DecodeString(x)
			if err != nil {
				return nil, bad(fmt.Errorf("binary literals are hex strings: %w", err))
			}
			if _, ok := tt.(iceberg.FixedType); ok {
				return iceberg.FixedLiteral(b), nil
			}
			return iceberg.BinaryLiteral(b), nil
		case iceberg.Float32Type, iceberg.Float64Type:
			switch x {
			case "NaN":
				return iceberg.Float64Literal(math.NaN()), nil
			case "Infinity":
				return iceberg.Float64Literal(math.Inf(1)), nil
			case "-Infinity":
				return iceberg.Float64Literal(math.Inf(-1)), nil
			}
			f, err := strconv.ParseFloat(x, 64)
			if err != nil {
				return nil, bad(err)
			}
			return iceberg.Float64Literal(f), nil
		}
		return convertLiteral(iceberg.StringLiteral(x), t, bad)
	}
	return nil, bad(fmt.Errorf("unsupported JSON literal"))
}

func convertLiteral(l iceberg.Literal, t iceberg.Type, bad func(error) error) (lit iceberg.Literal, err error) {
	defer func() {
		if r := recover(); r != nil {
			lit, err = nil, bad(fmt.Errorf("%v", r))
		}
	}()
	out, err := l.To(t)
	if err != nil {
		return nil, bad(err)
	}
	return out, nil
}
