package restplan

import (
	"encoding/json"
	"net/http"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// errorModel is the REST spec's ErrorModel.
type errorModel struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// maxMessage bounds an error message (client strings in it are quoted to
// perr.MaxQuoted bytes already).
const maxMessage = 2048

func newError(status int, typ, msg string) errorModel {
	return errorModel{Message: perr.Truncate(msg, maxMessage), Type: typ, Code: status}
}

func failure(status int, typ, msg string) *probeFailure {
	b, _ := json.Marshal(struct {
		Error errorModel `json:"error"`
	}{newError(status, typ, msg)})
	return &probeFailure{status: status, header: http.Header{"Content-Type": {"application/json"}}, body: b}
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	failure(status, typ, msg).write(w)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalServerError", "encode answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// errorOf maps a planning error to an HTTP status and REST error type.
// Errors in the request are answered at once (400, 404); failures of the
// planning itself become a "failed" plan result.
func errorOf(err error) (status int, typ string, requestError bool) {
	switch perr.KindOf(err) {
	case perr.InvalidArgument, perr.ResourceExhausted:
		return http.StatusBadRequest, "BadRequestException", true
	case perr.NotFound:
		return http.StatusNotFound, "NoSuchTableException", true
	case perr.PermissionDenied:
		return http.StatusForbidden, "ForbiddenException", true
	case perr.Unimplemented:
		return http.StatusNotAcceptable, "UnsupportedOperationException", true
	case perr.Unavailable:
		return http.StatusServiceUnavailable, "ServiceUnavailableException", false
	case perr.FailedPrecondition, perr.Corrupt:
		return http.StatusInternalServerError, "ValidationException", false
	}
	return http.StatusInternalServerError, "InternalServerError", false
}

func perrQuote(s string) string { return perr.Quote(s) }
