// Package version names the lakeweed build: the upstream SeaweedFS version it
// extends plus the pushdown API version.
package version

import (
	"fmt"

	upstream "github.com/seaweedfs/seaweedfs/weed/util/version"
)

// APIVersion is the version of the pushdown gRPC API (weed/pb/pushdown.proto).
const APIVersion = "1"

// Commit is set at build time with -ldflags "-X .../version.Commit=<sha>".
var Commit = ""

// String is what `weed pushdown status` and the Status RPCs report.
func String() string {
	s := fmt.Sprintf("lakeweed pushdown api %s on seaweedfs %s", APIVersion, upstream.VERSION)
	if Commit != "" {
		s += " (" + Commit + ")"
	}
	return s
}
