package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// rawConn is a plain gRPC connection to a member, for requests with a token set by hand.
func rawConn(t *testing.T, m *Member) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(m.ClientURL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func login(t *testing.T, m *Member, user, password string) string {
	t.Helper()
	resp, err := pb.NewAuthClient(rawConn(t, m)).Authenticate(Ctx(t), &pb.AuthenticateRequest{Name: user, Password: password})
	if err != nil {
		t.Fatalf("authenticate %s on %s: %v", user, m.Name, err)
	}
	return resp.Token
}

func getWithToken(t *testing.T, m *Member, token, key string) error {
	t.Helper()
	ctx := metadata.AppendToOutgoingContext(Ctx(t), "token", token)
	_, err := pb.NewKVClient(rawConn(t, m)).Range(ctx, &pb.RangeRequest{Key: []byte(key)})
	return err
}

// jwtKeys writes an ES256 key pair and returns the --auth-token value for it.
func jwtKeys(t *testing.T, ttl string) string {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(key)
	pubDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	dir := t.TempDir()
	priv, pub := filepath.Join(dir, "jwt.key"), filepath.Join(dir, "jwt.pub")
	os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
	os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600)
	return "jwt,pub-key=" + pub + ",priv-key=" + priv + ",sign-method=ES256,ttl=" + ttl
}

// A token issued by one member is accepted by the others, with simple and JWT tokens; a JWT
// issued before users or roles changed is refused as old, and the Go client logs in again by
// itself when its token is refused.
func TestAuthTokensAcrossMembers(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	for _, kind := range []string{"simple", "jwt"} {
		t.Run(kind, func(t *testing.T) {
			opt := []string{"--auth-token", "simple", "--auth-token-ttl", "2"}
			if kind == "jwt" {
				opt = []string{"--auth-token", jwtKeys(t, "2s")}
			}
			c := NewCluster(t, 3, opt...)
			c.Start()
			setupAuth(t, userClient(t, c.Endpoints(), "", "", nil))
			tok := login(t, c.Members[0], "alice", "alicepw")
			for _, m := range c.Members {
				if err := getWithToken(t, m, tok, "/a/1"); err != nil {
					t.Errorf("%s token from m1 on %s: %v", kind, m.Name, err)
				}
				if err := getWithToken(t, m, tok, "/x"); !strings.Contains(err.Error(), "permission denied") {
					t.Errorf("%s token from m1 on %s reading /x: %v", kind, m.Name, err)
				}
			}
			// A long-lived client keeps working past the token's life (2 s): refused tokens
			// make it log in again.
			alice := userClient(t, []string{c.Members[1].ClientURL}, "alice", "alicepw", nil)
			for i := 0; i < 4; i++ {
				if _, err := alice.Put(Ctx(t), "/a/k", "v"); err != nil {
					t.Fatalf("put %d: %v", i, err)
				}
				time.Sleep(1500 * time.Millisecond)
			}
			err := getWithToken(t, c.Members[2], tok, "/a/1")
			if err == nil || !strings.Contains(err.Error(), "invalid auth token") {
				t.Errorf("%s token past its life: %v", kind, err)
			}
			if kind == "jwt" {
				// A change to users or roles makes earlier JWTs old.
				tok = login(t, c.Members[0], "alice", "alicepw")
				root := userClient(t, c.Endpoints(), "root", "rootpw", nil)
				if _, err := root.RoleAdd(Ctx(t), "another"); err != nil {
					t.Fatal(err)
				}
				err := getWithToken(t, c.Members[2], tok, "/a/1")
				if err == nil || !strings.Contains(err.Error(), rpctypes.ErrGRPCAuthOldRevision.Error()) {
					t.Errorf("JWT from before a role change: %v", err)
				}
			}
		})
	}
}

// With --client-cert-auth, a client that presents a certificate and no token is the user its
// certificate's common name names ("client" here); a token, when sent, wins.
func TestAuthClientCertificateCommonName(t *testing.T) {
	certs := NewCerts(t)
	c := NewCluster(t, 1)
	c.UseTLS(certs)
	c.Start()
	eps := c.Endpoints()
	tc := certs.ClientTLS(t, true)
	admin := userClient(t, eps, "", "", tc)
	setupAuth(t, admin)
	root := userClient(t, eps, "root", "rootpw", tc)
	ctx := Ctx(t)
	if _, err := root.UserAddWithOptions(ctx, "client", "", &clientv3.UserAddOptions{NoPassword: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.UserGrantRole(ctx, "client", "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Put(ctx, "/a/1", "v"); err != nil {
		t.Fatal(err)
	}
	byCert := userClient(t, eps, "", "", tc)
	if r, err := byCert.Get(ctx, "/a/1"); err != nil || len(r.Kvs) != 1 {
		t.Errorf("certificate user reading /a/1: %v", err)
	}
	_, err := byCert.Put(ctx, "/x", "v")
	requireErr(t, "certificate user writing /x", err, rpctypes.ErrGRPCPermissionDenied)
	if _, err := byCert.Put(ctx, "/a/2", "v"); err != nil {
		t.Errorf("certificate user writing /a/2: %v", err)
	}
	// The no-password user cannot log in with a password.
	_, err = userClient(t, eps, "", "", tc).Authenticate(ctx, "client", "anything")
	if err == nil || !strings.Contains(err.Error(), "password was given for no password user") {
		t.Errorf("password login of a no-password user: %v", err)
	}
	// Through the JSON gateway the member's own certificate is not a caller.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	resp, err := hc.Post(c.Members[0].ClientURL+"/v3/kv/range", "application/json", strings.NewReader(`{"key":"L2EvMQ=="}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "user name is empty") {
		t.Errorf("gateway request with only the client certificate: %s %s", resp.Status, body)
	}
}

// The JSON gateway: /v3/auth/* and the token in the Authorization header, with or without
// "Bearer ".
func TestAuthGateway(t *testing.T) {
	c := NewCluster(t, 1)
	c.Start()
	m := c.Members[0]
	setupAuth(t, userClient(t, c.Endpoints(), "", "", nil))
	post := func(path, token, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, m.ClientURL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %s: %v", path, b, err)
		}
		return resp.StatusCode, out
	}
	code, out := post("/v3/auth/authenticate", "", `{"name":"alice","password":"alicepw"}`)
	tok, _ := out["token"].(string)
	if code != 200 || tok == "" {
		t.Fatalf("authenticate: %d %v", code, out)
	}
	if code, out := post("/v3/kv/put", tok, `{"key":"L2EvMQ==","value":"dg=="}`); code != 200 {
		t.Errorf("put with token: %d %v", code, out)
	}
	if code, out := post("/v3/kv/range", "Bearer "+tok, `{"key":"L2EvMQ=="}`); code != 200 || out["count"] != "1" {
		t.Errorf("range with Bearer token: %d %v", code, out)
	}
	if code, out := post("/v3/kv/put", tok, `{"key":"L3g=","value":"dg=="}`); code != 403 || out["message"] != "etcdserver: permission denied" {
		t.Errorf("put /x with token: %d %v", code, out)
	}
	if code, out := post("/v3/kv/range", "", `{"key":"L2EvMQ=="}`); code != 400 || out["message"] != "etcdserver: user name is empty" {
		t.Errorf("range without token: %d %v", code, out)
	}
	if code, out := post("/v3/auth/authenticate", "", `{"name":"alice","password":"nope"}`); code != 400 || out["message"] != "etcdserver: authentication failed, invalid user ID or password" {
		t.Errorf("wrong password: %d %v", code, out)
	}
	_, out = post("/v3/auth/authenticate", "", `{"name":"root","password":"rootpw"}`)
	rootTok, _ := out["token"].(string)
	if code, out := post("/v3/auth/user/list", rootTok, `{}`); code != 200 || len(out["users"].([]any)) != 2 {
		t.Errorf("user list as root: %d %v", code, out)
	}
	if code, out := post("/v3/auth/status", rootTok, `{}`); code != 200 || out["enabled"] != true {
		t.Errorf("auth status: %d %v", code, out)
	}
}

// A burst of wrong passwords is refused with upstream's error while other clients' requests
// keep being answered.
func TestAuthWrongPasswordBurst(t *testing.T) {
	c := NewCluster(t, 1)
	c.Start()
	m := c.Members[0]
	setupAuth(t, userClient(t, c.Endpoints(), "", "", nil))
	alice := userClient(t, c.Endpoints(), "alice", "alicepw", nil)
	if _, err := alice.Put(Ctx(t), "/a/1", "v"); err != nil {
		t.Fatal(err)
	}
	auth := pb.NewAuthClient(rawConn(t, m))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wrong := map[string]int{}
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := auth.Authenticate(ctx, &pb.AuthenticateRequest{Name: "alice", Password: "guess"})
			mu.Lock()
			wrong[rpctypes.ErrorDesc(err)]++
			mu.Unlock()
		}()
	}
	reads := 0
	for i := 0; i < 100; i++ {
		if _, err := alice.Get(Ctx(t), "/a/1"); err != nil {
			t.Fatalf("read %d during the burst: %v", i, err)
		}
		reads++
	}
	wg.Wait()
	if len(wrong) != 1 || wrong["etcdserver: authentication failed, invalid user ID or password"] != 40 {
		t.Errorf("wrong-password answers: %v", wrong)
	}
	if reads != 100 {
		t.Errorf("reads answered during the burst: %d", reads)
	}
	if _, err := userClient(t, c.Endpoints(), "alice", "alicepw", nil).Get(Ctx(t), "/a/1"); err != nil {
		t.Errorf("right password after the burst: %v", err)
	}
}

// etcdctl --auth-jwt-token (3.7): a JWT from Authenticate stands for the user on every call,
// through our etcdctl as through upstream 3.7.3's, against our member: the same answers, a
// permission error for a key the user may not read, and the token winning over --user. At
// level 3.6 the flag does not exist, as in upstream 3.6.16.
func TestEtcdctlAuthJWTToken(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
	m := NewMember(t, "--auth-token", jwtKeys(t, "60s"))
	m.Start()
	setupAuth(t, userClient(t, []string{m.ClientURL}, "", "", nil))
	if _, err := userClient(t, []string{m.ClientURL}, "root", "rootpw", nil).Put(Ctx(t), "/a/1", "one"); err != nil {
		t.Fatal(err)
	}
	tok := login(t, m, "alice", "alicepw")
	ep := "--endpoints=" + m.ClientURL
	for _, args := range [][]string{
		{ep, "--auth-jwt-token=" + tok, "get", "/a/1"},
		{ep, "--auth-jwt-token", tok, "get", "/x"},
		{ep, "--auth-jwt-token=" + tok, "--user=nobody:wrong", "get", "/a/1", "--print-value-only"},
		{ep, "--auth-jwt-token=not-a-token", "get", "/a/1"},
	} {
		// Standard error also holds the client library's retry warnings, which name its version.
		ucode, uerr, uout := runCLI(t, UpstreamBinaryAt(t, Upstream37Version, "etcdctl"), args...)
		ocode, oerr, oout := runCLI(t, Binary(t, "etcdctl"), args...)
		uerr, oerr = errorLine.FindString(uerr), errorLine.FindString(oerr)
		if ucode != ocode || uout != oout || uerr != oerr {
			t.Errorf("etcdctl %v:\n ours     (exit %d) %q %q\n upstream (exit %d) %q %q", args[1:], ocode, oout, oerr, ucode, uout, uerr)
		}
	}
	if code, out := ctl(t, Binary(t, "etcdctl"), "", ep, "--auth-jwt-token="+tok, "get", "/a/1"); code != 0 || !strings.Contains(out, "one") {
		t.Errorf("ours with the token: exit %d %q", code, out)
	}
	ucode, uout := ctl(t, UpstreamBinaryAt(t, Upstream36Version, "etcdctl"), "", ep, "--auth-jwt-token="+tok, "get", "/a/1")
	ocode, oout := ctl(t, ToolAt(t, LastReleaseLevel, "etcdctl"), "", ep, "--auth-jwt-token="+tok, "get", "/a/1")
	if ucode != ocode || errorLine.FindString(uout) != errorLine.FindString(oout) || ocode == 0 {
		t.Errorf("level 3.6: ours (exit %d) %q, upstream 3.6.16 (exit %d) %q", ocode, oout, ucode, uout)
	}
}
