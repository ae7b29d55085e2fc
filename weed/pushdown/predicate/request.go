package predicate

import (
	"errors"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// DecodeRequest decodes a request's predicate bytes of the given kind and
// binds them to schema: TRUE when empty; INVALID_ARGUMENT naming the
// problem otherwise.
func DecodeRequest(kind pushdown_pb.PredicateKind, b []byte, schema *iceberg.Schema, lim Limits) (Expr, error) {
	if len(b) == 0 {
		if kind != pushdown_pb.PredicateKind_PREDICATE_UNSPECIFIED {
			return nil, perr.New(perr.InvalidArgument, "predicate_kind is %s but the predicate is empty", kind)
		}
		return Const{Value: true}, nil
	}
	var raw Expr
	var err error
	switch kind {
	case pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT:
		raw, err = DecodeSubstrait(b, schema)
	case pushdown_pb.PredicateKind_PREDICATE_ICEBERG:
		raw, err = DecodeIcebergJSON(b, schema)
	default:
		return nil, perr.New(perr.InvalidArgument, "predicate_kind is %s; want PREDICATE_SUBSTRAIT or PREDICATE_ICEBERG", kind)
	}
	if err != nil {
		return nil, bindError(err)
	}
	e, err := Bind(raw, schema, lim)
	if err != nil {
		return nil, bindError(err)
	}
	return e, nil
}

func bindError(err error) error {
	var be *BindError
	if errors.As(err, &be) {
		return perr.New(perr.InvalidArgument, "predicate: %s", be.Msg)
	}
	return err
}
