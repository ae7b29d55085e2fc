package cli

import (
	"regexp"
	"strings"
	"unicode"
)

// rpcError matches gRPC's rendering of a status, "rpc error: code = X desc = ".
var rpcError = regexp.MustCompile(`rpc error: code = (\w+) desc = `)

// s3Object matches a table file's location: s3://bucket/…/<dir>/<name>.
var s3Object = regexp.MustCompile(`s3://[^\s"'()]+/([^/\s"'()]+/[^/\s"'()]+)`)

// explain is an error as a user reads it. An error a pushdown service
// answered is summarised: gRPC's "rpc error: code = X desc = " renderings
// become "X: " in words, and a table file's full location
// (s3://bucket/ns/table-uuid/data/part-00001.parquet) is cut to its last
// two segments ("…/data/part-00001.parquet"). Other errors (an import's
// list of the paths it refuses, say) are left whole.
func explain(err error) string {
	msg := err.Error()
	if !rpcError.MatchString(msg) {
		return msg
	}
	msg = rpcError.ReplaceAllStringFunc(msg, func(m string) string {
		return words(rpcError.FindStringSubmatch(m)[1]) + ": "
	})
	return s3Object.ReplaceAllString(msg, "…/$1")
}

// words spells a gRPC code name in lower-case words ("FailedPrecondition"
// → "failed precondition").
func words(code string) string {
	var b strings.Builder
	for i, r := range code {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
