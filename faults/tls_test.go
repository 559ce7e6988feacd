package faults_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/redistest"
)

// tlsFiles writes a CA and a server certificate for 127.0.0.1 signed by
// it, and returns the paths of the CA, the server certificate and key.
func tlsFiles(t *testing.T) (ca, cert, key string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "governor test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", keyDER)
}

// rediss:// against a local TLS redis-server: governor works when the
// server's CA is trusted (SSL_CERT_FILE, as for any Go program), and
// refuses clearly, exit 125, when it is not.
func TestTLS(t *testing.T) {
	t.Parallel()
	ca, cert, key := tlsFiles(t)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	redistest.Start(t, "--port", "0", "--tls-port", strconv.Itoa(port), "--tls-cert-file", cert,
		"--tls-key-file", key, "--tls-ca-cert-file", ca, "--tls-auth-clients", "no")
	project := uniq("tls")
	cfg := runConfig(t, project, "resources:\n  heavy: {limit: 1}\n")
	global := []string{"--config", cfg, "--backend", "redis", "--redis-url", "rediss://127.0.0.1:" + strconv.Itoa(port) + "/0"}
	trust := []string{"SSL_CERT_FILE=" + ca}

	r := governorCLI(t, trust, append(global, "acquire", "heavy", "--ttl", "1m")...)
	if r.code != 0 {
		t.Fatalf("acquire over TLS: exit %d %s", r.code, r.stderr)
	}
	lease := strings.Fields(r.stdout)[0]
	r = governorCLI(t, trust, append(global, "--json", "slots", "heavy")...)
	var sj struct {
		Resources []struct {
			Used int `json:"used"`
		} `json:"resources"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &sj) != nil || len(sj.Resources) != 1 || sj.Resources[0].Used != 1 {
		t.Fatalf("slots over TLS: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := governorCLI(t, trust, append(global, "run", "--resource", "heavy", "--", "true")...); r.code != 73 {
		t.Fatalf("run while held: exit %d, want 73: %s", r.code, r.stderr)
	}
	if r := governorCLI(t, trust, append(global, "release", lease)...); r.code != 0 {
		t.Fatalf("release over TLS: exit %d %s", r.code, r.stderr)
	}
	if r := governorCLI(t, trust, append(global, "run", "--resource", "heavy", "--", "true")...); r.code != 0 {
		t.Fatalf("run over TLS: exit %d %s", r.code, r.stderr)
	}

	// An untrusted server certificate: a clear refusal, not a hang.
	r = governorCLI(t, nil, append(global, "slots")...)
	if r.code != 125 || !strings.Contains(r.stderr, "certificate") {
		t.Fatalf("untrusted certificate: exit %d %q; want 125 naming the certificate", r.code, r.stderr)
	}
}
