package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// sigv4Call is one REST call signed with AWS SigV4 as an Iceberg REST
// client with rest.sigv4-enabled signs it (signing name s3tables).
type sigv4Call struct {
	key, secret string
	at          time.Time // signing time (zero: now)
	// claimed sends x-amz-content-sha256 with the hash of claimed (nil:
	// no header; the signature then covers the body's own hash)
	claimed []byte
}

func (s sigv4Call) do(t *testing.T, method, u string, body []byte) (int, map[string]any, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	signed := body
	if s.claimed != nil {
		signed = s.claimed
	}
	sum := sha256.Sum256(signed)
	hash := hex.EncodeToString(sum[:])
	if s.claimed != nil {
		req.Header.Set("X-Amz-Content-Sha256", hash)
	}
	at := s.at
	if at.IsZero() {
		at = time.Now()
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: s.key, SecretAccessKey: s.secret}, req, hash, "s3tables", "us-east-1", at); err != nil {
		t.Fatal(err)
	}
	return sendREST(t, req)
}

func errorType(res map[string]any) string {
	e, _ := res["error"].(map[string]any)
	s, _ := e["type"].(string)
	return s
}

func errorMessage(res map[string]any) string {
	e, _ := res["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// Planning requests signed with AWS SigV4 (PyIceberg's and Iceberg Java's
// rest.sigv4-enabled) are verified against the cluster's S3 identities and
// authorized as that identity's LoadTable: a good signature plans, and the
// plan belongs to its access key; a forged, expired or body-swapped
// signature and an identity that may not load the table are refused exactly
// as LoadTable refuses them; PyIceberg and Iceberg Java signing every call
// read the rows of iceberg-go's local planning.
func TestSigV4SignedScanPlanningIsVerifiedAndAuthorizedAsLoadTable(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	opts := harness.MiniOptions{
		Setup: func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "identities.json"), []byte(restplanIdentities), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		ExtraArgs: []string{"-s3.config=identities.json"},
		AccessKey: "AKADMIN000000000", SecretKey: "admin-secret",
	}
	metricsURL := harness.WithMetrics(t, &opts)
	c := harness.StartMini(t, opts)
	// plans answered 200 so far: a client that planned locally would not move it
	plans := func() float64 {
		v, _ := harness.Scrape(t, metricsURL).Value("SeaweedFS_pushdown_rest_requests_total", "endpoint", "plan", "status", "200")
		return v
	}
	appendRows(t, appendRows(t, createDeleteTable(t, c, "acl_it", "closed", 2), 0, 300), 300, 600)
	open := appendRows(t, appendRows(t, createDeleteTable(t, c, "acl_it", "open", 2), 0, 300), 300, 600)
	tbl := func(ns, name string) string {
		return c.IcebergURI() + "/v1/" + c.Warehouse + "/namespaces/" + ns + "/tables/" + name
	}
	admin := sigv4Call{key: "AKADMIN000000000", secret: "admin-secret"}
	planBody := []byte(`{"filter": {"type": "lt", "term": "id", "value": 100}, "select": ["id"]}`)

	// a good signature plans (body hashed by the verifier, or claimed in
	// x-amz-content-sha256), and the plan is the signer's
	var planID string
	for _, call := range []sigv4Call{admin, {key: admin.key, secret: admin.secret, claimed: planBody}} {
		code, res, raw := call.do(t, http.MethodPost, tbl("acl_it", "open")+"/plan", planBody)
		if code != 200 || res["status"] != "completed" {
			t.Fatalf("admin's SigV4-signed plan of acl_it.open: %d %s", code, raw)
		}
		tasks, _ := res["file-scan-tasks"].([]any)
		if len(tasks) == 0 {
			t.Fatalf("admin's SigV4-signed plan of acl_it.open (id < 100) names no files: %s", raw)
		}
		planID, _ = res["plan-id"].(string)
	}
	bob := sigv4Call{key: "AKBOB00000000000", secret: "bob-secret"}
	if code, res, raw := bob.do(t, http.MethodDelete, tbl("acl_it", "open")+"/plan/"+planID, nil); code != 404 || errorType(res) != "NoSuchPlanIdException" {
		t.Fatalf("bob cancels admin's plan: %d %s; want 404 NoSuchPlanIdException", code, raw)
	}
	if code, _, raw := admin.do(t, http.MethodDelete, tbl("acl_it", "open")+"/plan/"+planID, nil); code != 204 {
		t.Fatalf("admin cancels its plan with another signature: %d %s; want 204", code, raw)
	}

	// refusals are LoadTable's, whether or not the table exists
	alice := sigv4Call{key: "AKALICE000000000", secret: "alice-secret"}
	refused := []struct {
		who  string
		call sigv4Call
	}{
		{"a forged signature", sigv4Call{key: admin.key, secret: "not-the-secret"}},
		{"an unknown access key", sigv4Call{key: "AKNOBODY00000000", secret: "x"}},
		{"an expired signature", sigv4Call{key: admin.key, secret: admin.secret, at: time.Now().Add(-20 * time.Minute)}},
		{"alice (may read acl_it/open only)", alice},
	}
	for _, r := range refused {
		for _, target := range []string{tbl("acl_it", "closed"), tbl("acl_it", "nosuchtable")} {
			lcode, lres, lraw := r.call.do(t, http.MethodGet, target, nil)
			if lcode == 200 {
				t.Fatalf("%s may load %s", r.who, target)
			}
			for _, call := range []struct {
				method, path string
				body         []byte
			}{{http.MethodPost, "/plan", planBody}, {http.MethodGet, "/plan/" + planID, nil}, {http.MethodDelete, "/plan/" + planID, nil}, {http.MethodPost, "/tasks", []byte(`{"plan-task": "x.1"}`)}} {
				code, res, raw := r.call.do(t, call.method, target+call.path, call.body)
				if code != lcode || errorType(res) != errorType(lres) || errorMessage(res) != errorMessage(lres) {
					t.Fatalf("%s %s %s: %d %s; LoadTable answers %d %s", r.who, call.method, target+call.path, code, raw, lcode, lraw)
				}
			}
		}
	}
	// a signature over another body does not carry this one
	swapped := sigv4Call{key: admin.key, secret: admin.secret, claimed: []byte(`{}`)}
	if code, res, raw := swapped.do(t, http.MethodPost, tbl("acl_it", "open")+"/plan", planBody); code != 400 || errorType(res) != "BadRequestException" {
		t.Fatalf("a plan request whose body is not the one signed: %d %s; want 400 BadRequestException", code, raw)
	}

	// clients someone else wrote, signing every call
	queries := []struct {
		sql     string
		iceberg iceberg.BooleanExpression
	}{
		{"id < 100", iceberg.LessThan(iceberg.Reference("id"), int64(100))},
		{"part = 'b' and id >= 450", iceberg.NewAnd(iceberg.EqualTo(iceberg.Reference("part"), "b"), iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(450)))},
		{"id = 299", iceberg.EqualTo(iceberg.Reference("id"), int64(299))},
	}
	check := func(who string, run func(mode string) []clientScan) {
		t.Helper()
		before := plans()
		servers := run("server")
		if got := plans() - before; got < float64(len(queries)) {
			t.Fatalf("%s in server mode: %v plan requests answered 200 for %d scans", who, got, len(queries))
		}
		clients := run("client")
		if len(servers) != len(queries) || len(clients) != len(queries) {
			t.Fatalf("%s answered %d and %d scans of %d", who, len(servers), len(clients), len(queries))
		}
		for i, q := range queries {
			want := scanWith(t, open, q.iceberg, table.ScanPlanningLocal, "id")
			slices.Sort(servers[i].IDs)
			slices.Sort(clients[i].IDs)
			if len(want.ids) == 0 || !slices.Equal(servers[i].IDs, want.ids) || !slices.Equal(clients[i].IDs, want.ids) {
				t.Fatalf("%s %q: server planning read %d rows, client planning %d, iceberg-go %d", who, q.sql, len(servers[i].IDs), len(clients[i].IDs), len(want.ids))
			}
			if servers[i].Files > clients[i].Files || servers[i].Files == 0 {
				t.Fatalf("%s %q: server planning named %d files, client planning %d", who, q.sql, servers[i].Files, clients[i].Files)
			}
			t.Logf("%s %q: %d rows; files planned: server %d, client %d", who, q.sql, len(want.ids), servers[i].Files, clients[i].Files)
		}
	}
	t.Run("PyIceberg", func(t *testing.T) {
		py := pyicebergSigV4(t)
		root, _ := harness.RepoRoot()
		script := filepath.Join(root, "test", "clients", "pyiceberg", "scan.py")
		args := func(mode, key string) []string {
			a := []string{script, "--uri", c.IcebergURI(), "--warehouse", c.Warehouse, "--s3", c.S3Endpoint(),
				"--table", "acl_it.open", "--mode", mode, "--select", "id", "--sigv4", key}
			for _, q := range queries {
				a = append(a, "--filter", q.sql)
			}
			return a
		}
		check("PyIceberg (SigV4)", func(mode string) []clientScan {
			return runClient(t, "PyIceberg SigV4 "+mode, py, args(mode, "AKADMIN000000000:admin-secret")...)
		})
	})
	t.Run("IcebergJava", func(t *testing.T) {
		java, cp := icebergJava(t)
		check("Iceberg Java (SigV4)", func(mode string) []clientScan {
			a := []string{"-cp", cp, "lakeweed.ScanTable", "--uri", c.IcebergURI(), "--warehouse", c.Warehouse, "--s3", c.S3Endpoint(),
				"--table", "acl_it.open", "--mode", mode, "--select", "id", "--sigv4", "AKADMIN000000000:admin-secret"}
			for _, q := range queries {
				bound, err := iceberg.BindExpr(open.Schema(), q.iceberg, true)
				if err != nil {
					t.Fatal(err)
				}
				js, _ := json.Marshal(bound)
				a = append(a, "--filter", string(js))
			}
			scans := runClient(t, "Iceberg Java SigV4 "+mode, java, a...)
			want := map[string]string{"server": "RESTTableScan", "client": "DataTableScan"}[mode]
			for _, s := range scans {
				if s.Scan != want {
					t.Fatalf("Iceberg Java (SigV4) in %s mode scanned with %s; want %s", mode, s.Scan, want)
				}
			}
			return scans
		})
	})
}

// pyicebergSigV4 is pyiceberg with its rest-sigv4 extra (boto3), or skips.
func pyicebergSigV4(t *testing.T) string {
	t.Helper()
	py := pyiceberg(t)
	if out, err := exec.Command(py, "-c", "import boto3").CombinedOutput(); err != nil {
		t.Skipf("PyIceberg's rest-sigv4 extra (boto3) is missing (%s: %v %s): run .ci/run, or .tools/pyiceberg/bin/pip install 'pyiceberg[pyarrow,rest-sigv4]==%s'", py, err, out, pyicebergVersion)
	}
	return py
}
