package predicate

import (
	"errors"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/bytelru"
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

// DecodeCache keeps requests' predicates decoded and bound, by the schema
// they were bound to: a service receiving the same predicate bytes for
// the same schema object (a cached metadata version, a cached parsed
// schema) decodes them once. A bound predicate is read only, shared by the
// calls that use it. Refusals are not kept.
type DecodeCache struct {
	lru *bytelru.Cache[decodeKey, Expr]
}

type decodeKey struct {
	schema *iceberg.Schema
	kind   pushdown_pb.PredicateKind
	lim    Limits
	wire   string
}

// MaxCachedPredicate bounds the predicates a DecodeCache keeps (bytes
// each): larger ones are decoded per call.
const MaxCachedPredicate = 64 << 10

// heldBytesPerWireByte estimates what a decoded, bound predicate holds per
// byte of its wire form (measured: ~24 for an IN list of 5,000 strings),
// rounded up: the cache is bounded by what its predicates hold, not by
// their count.
const heldBytesPerWireByte = 32

// decodedCost is the estimated bytes a decoded predicate of b holds.
func decodedCost(b []byte) int64 { return heldBytesPerWireByte*int64(len(b)) + 1024 }

// DefaultDecodeCacheBytes is what the services' decode caches hold (the
// catalog's and each volume server's).
const DefaultDecodeCacheBytes = 64 << 20

// NewDecodeCache keeps predicates holding up to capacity bytes (estimated:
// decodedCost).
func NewDecodeCache(capacity int64) *DecodeCache {
	return &DecodeCache{lru: bytelru.New[decodeKey, Expr](max(1, capacity), bytelru.Options[decodeKey, Expr]{})}
}

// Decode is DecodeRequest, answered from the cache when these bytes were
// bound to this schema before. A nil cache decodes every call.
func (c *DecodeCache) Decode(kind pushdown_pb.PredicateKind, b []byte, schema *iceberg.Schema, lim Limits) (Expr, error) {
	if c == nil || len(b) == 0 || len(b) > MaxCachedPredicate {
		return DecodeRequest(kind, b, schema, lim)
	}
	key := decodeKey{schema, kind, lim, string(b)}
	if e, ok := c.lru.Get(key); ok {
		return e, nil
	}
	e, err := DecodeRequest(kind, b, schema, lim)
	if err == nil {
		c.lru.Add(key, e, decodedCost(b))
	}
	return e, err
}

// Len is how many predicates are kept.
func (c *DecodeCache) Len() int { return c.lru.Len() }
