package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// writePKI writes a CA and one certificate (for 127.0.0.1) every component
// uses, plus a security.toml turning on gRPC TLS for the whole cluster.
func writePKI(t *testing.T, dir string) *tls.Config {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lakeweed test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "lakeweed"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.crt", "CERTIFICATE", caDER)
	write("node.crt", "CERTIFICATE", der)
	write("node.key", "EC PRIVATE KEY", keyDER)
	var toml strings.Builder
	toml.WriteString("[grpc]\nca = \"" + filepath.Join(dir, "ca.crt") + "\"\n")
	for _, comp := range []string{"master", "volume", "filer", "s3", "admin", "worker", "msg_broker", "msg_agent", "mq", "vector", "client"} {
		toml.WriteString("\n[grpc." + comp + "]\ncert = \"" + filepath.Join(dir, "node.crt") + "\"\nkey = \"" + filepath.Join(dir, "node.key") + "\"\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "security.toml"), []byte(toml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	pair, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: "127.0.0.1"}
}

// When the cluster's security.toml turns on gRPC TLS, both pushdown
// services serve TLS (with client certificates), discovery works over it,
// and clients without the certificate are refused.
func TestPushdownServicesUseTheClusterTLS(t *testing.T) {
	var tlsCfg *tls.Config
	c := harness.StartMini(t, harness.MiniOptions{
		Setup: func(dir string) { tlsCfg = writePKI(t, dir) },
		Dial:  grpc.WithTransportCredentials(credentials.NewTLS(nilSafe(&tlsCfg))),
	})
	out, errOut, err := harness.WeedIn(t, c.Dir, "pushdown", "status", "-catalog", c.CatalogAddr(), "-json")
	var st struct {
		VolumeEndpoints []struct {
			Healthy bool `json:"healthy"`
		} `json:"volume_endpoints"`
	}
	_ = json.Unmarshal([]byte(out), &st)
	if err != nil || len(st.VolumeEndpoints) != 1 || !st.VolumeEndpoints[0].Healthy {
		t.Fatalf("status with the cluster's client certificate: %v\n%s%s", err, out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, addr := range []string{c.CatalogAddr(), c.VolumePushdownAddr()} {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = pushdown_pb.NewPushdownVolumeClient(conn).Status(ctx, &pushdown_pb.StatusRequest{})
		conn.Close()
		if err == nil {
			t.Fatalf("%s answered a plaintext client", addr)
		}
	}
	// A client proven by the cluster's mTLS may send client-resolved data
	// files in connector-trusted mode: authorization passes, and the
	// unknown table is what stops the request.
	withCert, err := grpc.NewClient(c.CatalogAddr(), grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer withCert.Close()
	_, err = pushdown_pb.NewPushdownCatalogClient(withCert).Plan(ctx, &pushdown_pb.ParquetPushdownRequest{Table: "nope.nope",
		DataFiles: []*pushdown_pb.DataFileDescriptor{{Path: "s3://warehouse/nope/f.parquet", SizeBytes: 10, RecordCount: 1}}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("client-resolved plan over mTLS: %v, want NOT_FOUND for the unknown table (authorization passed)", err)
	}
	noCert := tlsCfg.Clone()
	noCert.Certificates = nil
	conn, err := grpc.NewClient(c.CatalogAddr(), grpc.WithTransportCredentials(credentials.NewTLS(noCert)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := pushdown_pb.NewPushdownCatalogClient(conn).Status(ctx, &pushdown_pb.StatusRequest{}); err == nil {
		t.Fatalf("the catalog pushdown service answered a client without a certificate")
	}
}

// nilSafe defers reading the TLS config until Setup has written it.
func nilSafe(p **tls.Config) *tls.Config {
	return &tls.Config{GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &(*p).Certificates[0], nil
	}, VerifyConnection: func(cs tls.ConnectionState) error {
		opts := x509.VerifyOptions{Roots: (*p).RootCAs, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}, InsecureSkipVerify: true}
}
