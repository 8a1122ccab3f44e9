package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// etcdctl over TLS with client certificate authentication: flags, ETCDCTL_* variables, endpoints
// with and without a scheme, and the refusals when the certificate or CA is missing.
func TestEtcdctlTLS(t *testing.T) {
	t.Parallel() // waits more than it computes (e2e/doc.go)
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

// onTerminal runs bin on a pseudo-terminal, answering each prompt in turn as it appears, and
// returns the exit status and everything the terminal showed.
func onTerminal(t *testing.T, bin string, dialog [][2]string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf) // ends with EIO when the process exits
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				close(done)
				return
			}
		}
	}()
	shown := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	seen := 0
	for _, d := range dialog {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(shown()[seen:], d[0]) {
			if time.Now().After(deadline) {
				t.Fatalf("no prompt %q; terminal shows %q", d[0], shown())
			}
			time.Sleep(20 * time.Millisecond)
		}
		seen = strings.Index(shown(), d[0]) + len(d[0])
		if _, err := tty.Write([]byte(d[1] + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	err = cmd.Wait()
	<-done
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return code, shown()
}

// --user without a password asks for it on the terminal, without echo, against a server with
// authentication on (upstream's and ours).
func TestEtcdctlPasswordPrompt(t *testing.T) {
	for _, impl := range []string{"upstream", "ours"} {
		t.Run(impl, func(t *testing.T) {
			m := NewMember(t)
			if impl == "upstream" {
				m.Bin = UpstreamBinary(t, "etcd")
			}
			m.Start()
			checkPasswordPrompt(t, m)
		})
	}
}

func checkPasswordPrompt(t *testing.T, m *Member) {
	ours := Binary(t, "etcdctl")
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
		return onTerminal(t, ours, [][2]string{{"Password: ", password}}, ep, "--user", "root", "get", "secret-key", "--print-value-only")
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

	// user add and user passwd ask twice, without echo, as upstream's etcdctl does.
	root := []string{ep, "--user", "root:s3cret"}
	code, out = onTerminal(t, ours, [][2]string{{"Password of alice: ", "pw-one"}, {"Type password of alice again for confirmation: ", "pw-one"}},
		append(root, "user", "add", "alice")...)
	if code != 0 || !strings.Contains(out, "User alice created") || strings.Contains(out, "pw-one") {
		t.Fatalf("user add on a terminal: exit %d, output %q", code, out)
	}
	code, out = onTerminal(t, ours, [][2]string{{"Password of alice: ", "pw-two"}, {"again for confirmation: ", "pw-other"}},
		append(root, "user", "passwd", "alice")...)
	if code != 128 || !strings.Contains(out, "given passwords are different") {
		t.Fatalf("user passwd with different passwords: exit %d, output %q", code, out)
	}
	code, out = onTerminal(t, ours, [][2]string{{"Password of alice: ", "pw-two"}, {"again for confirmation: ", "pw-two"}},
		append(root, "user", "passwd", "alice")...)
	if code != 0 || !strings.Contains(out, "Password updated") {
		t.Fatalf("user passwd on a terminal: exit %d, output %q", code, out)
	}
	code, out = ctl(t, ours, "", ep, "--user", "alice:pw-two", "user", "get", "alice")
	if code != 0 || !strings.Contains(out, "User: alice") {
		t.Fatalf("alice with her new password: exit %d\n%s", code, out)
	}
	code, out = onTerminal(t, ours, [][2]string{{"Password of bob: ", ""}}, append(root, "user", "add", "bob")...)
	if code != 128 || !strings.Contains(out, "empty password") {
		t.Fatalf("user add with an empty password: exit %d, output %q", code, out)
	}
	// --interactive=false reads the first word of the first line, as upstream's fmt.Scanf: an
	// empty line on a terminal is an empty password, not a wait for more (upstream's e2e
	// TestCtlV3AuthCertCN sends just that).
	code, out = onTerminal(t, ours, [][2]string{{"", ""}}, append(root, "user", "add", "carol", "--interactive=false")...)
	if code != 0 || !strings.Contains(out, "User carol created") {
		t.Fatalf("user add --interactive=false with an empty line: exit %d, output %q", code, out)
	}
}
