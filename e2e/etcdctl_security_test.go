package e2e

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// etcdctl over TLS with client certificate authentication: flags, ETCDCTL_* variables, endpoints
// with and without a scheme, and the refusals when the certificate or CA is missing.
func TestEtcdctlTLS(t *testing.T) {
	ours := Binary(t, "etcdctl")
	certs := NewCerts(t)
	c := NewCluster(t, 3)
	c.UseTLS(certs)
	c.Start()
	eps := "--endpoints=" + strings.Join(c.Endpoints(), ",")
	one := "--endpoints=" + c.Members[0].ClientURL
	tlsFlags := []string{"--cacert", certs.CA, "--cert", certs.ClientCert, "--key", certs.ClientKey}
	run := func(env []string, args ...string) (int, string) {
		t.Helper()
		return ctlEnv(t, ours, env, "", args...)
	}
	ok := func(want string, env []string, args ...string) {
		t.Helper()
		if code, out := run(env, args...); code != 0 || !strings.Contains(out, want) {
			t.Fatalf("etcdctl %v: exit %d, want %q in\n%s", args, code, want, out)
		}
	}
	ok("OK", nil, append([]string{eps, "put", "tls-key", "over tls"}, tlsFlags...)...)
	ok("over tls", nil, append([]string{eps, "get", "tls-key", "--print-value-only"}, tlsFlags...)...)
	ok("is healthy", nil, append([]string{eps, "endpoint", "health", "--cluster"}, tlsFlags...)...)
	ok("STORAGE VERSION", nil, append([]string{eps, "endpoint", "status", "-w", "table"}, tlsFlags...)...)
	// The same through ETCDCTL_* variables, and an endpoint without a scheme: TLS is implied by
	// the certificate flags.
	hostPort := strings.TrimPrefix(c.Members[1].ClientURL, "https://")
	ok("over tls", []string{"ETCDCTL_CACERT=" + certs.CA, "ETCDCTL_CERT=" + certs.ClientCert, "ETCDCTL_KEY=" + certs.ClientKey,
		"ETCDCTL_ENDPOINTS=" + hostPort}, "get", "tls-key", "--print-value-only")
	// Without the CA, only --insecure-skip-tls-verify gets through.
	ok("over tls", nil, one, "--cert", certs.ClientCert, "--key", certs.ClientKey, "--insecure-skip-tls-verify", "get", "tls-key")
	snap := t.TempDir() + "/snap.db"
	ok("Snapshot saved at "+snap, nil, append([]string{one, "snapshot", "save", snap}, tlsFlags...)...)

	for _, args := range [][]string{
		{one, "--cacert", certs.CA, "get", "tls-key"},                                                    // no client certificate
		{one, "--cert", certs.ClientCert, "--key", certs.ClientKey, "get", "tls-key"},                    // server not trusted
		{"--endpoints=" + strings.Replace(c.Members[0].ClientURL, "https", "http", 1), "get", "tls-key"}, // plain text to TLS
	} {
		args = append([]string{"--dial-timeout=1s", "--command-timeout=2s"}, args...)
		if code, out := run(nil, args...); code == 0 || !strings.Contains("\n"+out, "\nError: ") || strings.Contains(out, "over tls") {
			t.Fatalf("etcdctl %v: exit %d\n%s\nwant a refusal", args, code, out)
		}
	}
	if code, out := run(nil, one, "--cert", certs.ClientCert, "get", "k"); code == 0 || !strings.Contains(out, "Error: ") {
		t.Fatalf("--cert without --key: exit %d\n%s", code, out)
	}
}

// --user without a password asks for it on the terminal, without echo, against a server with
// authentication on (upstream etcd: ours has no auth yet).
func TestEtcdctlPasswordPrompt(t *testing.T) {
	ours := Binary(t, "etcdctl")
	m := NewMember(t)
	m.Bin = UpstreamBinary(t, "etcd")
	m.Start()
	c := m.Client()
	ctx := Ctx(t)
	if _, err := c.Put(ctx, "secret-key", "secret-value"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UserAdd(ctx, "root", "s3cret"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RoleAdd(ctx, "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	ep := "--endpoints=" + m.ClientURL

	withPassword := func(password string) (int, string) {
		t.Helper()
		cmd := exec.Command(ours, ep, "--user", "root", "get", "secret-key", "--print-value-only")
		tty, err := pty.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		defer tty.Close()
		var out bytes.Buffer
		done := make(chan struct{})
		go func() {
			io.Copy(&out, tty) // ends with EIO when the process exits
			close(done)
		}()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), "Password: ") {
			if time.Now().After(deadline) {
				t.Fatalf("no password prompt; output %q", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := tty.Write([]byte(password + "\n")); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		<-done
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, out.String()
	}
	code, out := withPassword("s3cret")
	if code != 0 || !strings.Contains(out, "secret-value") {
		t.Fatalf("right password: exit %d, output %q", code, out)
	}
	if strings.Contains(out, "s3cret") {
		t.Fatalf("the password was echoed: %q", out)
	}
	code, out = withPassword("wrong")
	if code == 0 || !strings.Contains(out, "authentication failed") {
		t.Fatalf("wrong password: exit %d, output %q", code, out)
	}
	// Without a terminal there is no prompt, only the error (exit 1, as upstream's failed prompt).
	code, out = ctl(t, ours, "", ep, "--user", "root", "get", "secret-key")
	if code != 1 || !strings.Contains(out, "standard input is not a terminal") {
		t.Fatalf("no terminal: exit %d\n%s", code, out)
	}
	code, out = ctl(t, ours, "", ep, "--user", "root:s3cret", "get", "secret-key", "--print-value-only")
	if code != 0 || strings.TrimSpace(out) != "secret-value" {
		t.Fatalf("--user root:password: exit %d\n%s", code, out)
	}
}
