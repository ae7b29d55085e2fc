package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// On a cluster with S3 identities, a caller who may not create table
// buckets is told the exact command that creates the missing one, and
// nothing is loaded; an admin's demo creates it and loads.
func TestAMissingTableBucketIsCreatedForAnAdminAndNamedWithItsCommandForOthers(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	c := harness.StartMini(t, harness.MiniOptions{
		Setup: func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "identities.json"), []byte(accessIdentities), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		ExtraArgs: []string{"-s3.config=identities.json"},
		AccessKey: "AKADMIN000000000", SecretKey: "admin-secret",
	})
	demo := func(key, secret string) (string, string, error) {
		return harness.WeedEnv(t, "", []string{"AWS_ACCESS_KEY_ID=" + key, "AWS_SECRET_ACCESS_KEY=" + secret},
			"pushdown", "demo", "-table", "tb_it.events", "-rows", "1000", "-files", "1", "-catalog", c.CatalogAddr(), "-warehouse", "lakehouse")
	}
	out, errOut, err := demo("AKALICE000000000", "alice-secret")
	if err == nil {
		t.Fatalf("alice, who may not create table buckets, loaded the demo:\n%s", out)
	}
	command := "aws --endpoint-url " + c.S3Endpoint() + " s3tables create-table-bucket --name lakehouse"
	if !strings.Contains(errOut, `table bucket "lakehouse" does not exist`) || !strings.Contains(errOut, command) ||
		!strings.Contains(errOut, "s3tables.bucket -create -name lakehouse -account 000000000000") {
		t.Errorf("the refusal does not name the commands that create the table bucket:\n%s", errOut)
	}
	t.Logf("alice is told: %s", strings.TrimSpace(errOut))
	out, errOut, err = demo("AKADMIN000000000", "admin-secret")
	if err != nil {
		t.Fatalf("the admin's demo: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, `created table bucket "lakehouse"`) || !strings.Contains(out, "loaded tb_it.events") {
		t.Errorf("the admin's demo did not create the table bucket and load:\n%s", out)
	}
	// A key no identity has is refused by a cluster with identities, the
	// error saying which credentials to set.
	_, errOut, err = harness.WeedEnv(t, "", []string{"AWS_ACCESS_KEY_ID=any", "AWS_SECRET_ACCESS_KEY=any"},
		"pushdown", "query", "-sql", "SELECT id FROM tb_it.events LIMIT 1", "-catalog", c.CatalogAddr(), "-warehouse", "lakehouse")
	if err == nil || !strings.Contains(errOut, `refused access key "any"`) || !strings.Contains(errOut, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to an identity of the cluster's S3 configuration") {
		t.Errorf("a key no identity has: %v\n%s", err, errOut)
	}
}
