package catalog

import (
	"context"
	"fmt"

	"github.com/seaweedfs/seaweedfs/weed/security"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Trust modes for client-resolved plans (requests carrying data_files), as
// the -pushdown.trustMode flag names them.
const (
	TrustConnector = "connector-trusted"
	TrustValidated = "catalog-validated"
)

// ParseTrustMode maps a flag value to the mode.
func ParseTrustMode(s string) (pushdown_pb.TrustMode, error) {
	switch s {
	case TrustConnector:
		return pushdown_pb.TrustMode_CONNECTOR_TRUSTED, nil
	case TrustValidated:
		return pushdown_pb.TrustMode_CATALOG_VALIDATED, nil
	}
	return 0, fmt.Errorf("trust mode %q: want %s or %s", s, TrustConnector, TrustValidated)
}

// TrustModeName is the flag spelling of a mode.
func TrustModeName(m pushdown_pb.TrustMode) string {
	switch m {
	case pushdown_pb.TrustMode_CONNECTOR_TRUSTED:
		return TrustConnector
	case pushdown_pb.TrustMode_CATALOG_VALIDATED:
		return TrustValidated
	}
	return m.String()
}

// Trust configures who may send client-resolved plans.
type Trust struct {
	Mode pushdown_pb.TrustMode
	// TokenKey verifies "authorization: Bearer <jwt>" metadata in
	// connector-trusted mode: security.toml's [jwt.filer_signing] key (HS256,
	// as SeaweedFS signs filer tokens). Empty = tokens are not accepted.
	TokenKey security.SigningKey
}

// Usable says whether connector-trusted requests can be accepted at all.
func (t Trust) Usable(tlsEnabled bool) bool {
	return t.Mode != pushdown_pb.TrustMode_CONNECTOR_TRUSTED || tlsEnabled || len(t.TokenKey) > 0
}

// authorizeConnector admits a connector-trusted request: the caller
// presented a client certificate the server verified (the cluster's mTLS),
// or a token signed with the cluster's filer signing key whose allowed
// prefixes, when present, cover every file of the request. An S3 identity
// is not enough: it could omit delete files.
func (t Trust) authorizeConnector(ctx context.Context, _ *access.Caller, req *pushdown_pb.ParquetPushdownRequest) error {
	caller, err := (&access.Guard{Keys: access.NewKeys(t.TokenKey)}).Authenticate(ctx, "Plan", req)
	if err != nil || caller.Kind == access.S3 {
		if access.BearerToken(ctx) != "" && err != nil {
			return perr.New(perr.PermissionDenied, "connector-trusted mode: %v", err)
		}
		if len(t.TokenKey) == 0 {
			return perr.New(perr.PermissionDenied, "connector-trusted mode accepts client-resolved data files only over the cluster's gRPC mTLS ([grpc] ca and [grpc.s3] cert/key in security.toml) or with a bearer token signed with [jwt.filer_signing] key, and neither is configured; send no data_files (the catalog resolves the snapshot) or run the catalog with -pushdown.trustMode=catalog-validated")
		}
		return perr.New(perr.PermissionDenied, "connector-trusted mode: client-resolved data files need a client certificate (mTLS) or an \"authorization: Bearer <jwt>\" metadata entry signed with [jwt.filer_signing] key")
	}
	check := func(what, loc string) error {
		l, err := access.ParseLocation(loc)
		if err != nil {
			return perr.New(perr.KindOf(err), "%s: %w", what, err)
		}
		if !caller.Allows(l) {
			return perr.New(perr.PermissionDenied, "%s %s is outside the token's allowed prefixes", what, perr.Quote(loc))
		}
		return nil
	}
	for i, df := range req.GetDataFiles() {
		if err := check(fmt.Sprintf("data_files[%d]", i), df.GetPath()); err != nil {
			return err
		}
		for j, d := range df.GetDeletes() {
			if err := check(fmt.Sprintf("data_files[%d].deletes[%d]", i, j), d.GetPath()); err != nil {
				return err
			}
		}
	}
	return nil
}
