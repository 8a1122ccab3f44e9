package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// watch follows new writes as they happen, interactive mode takes several watches and a progress
// request, and --progress-notify reports the revision of a quiet watch.
func TestEtcdctlWatchFollowsWrites(t *testing.T) {
	ours := Binary(t, "etcdctl")
	m := NewMember(t, "--watch-progress-notify-interval=300ms")
	m.Start()
	ep := "--endpoints=" + m.ClientURL
	c := m.Client()
	ctx := Ctx(t)

	w := StartCtl(t, ours, nil, ep, "watch", "w/", "--prefix", "--prev-kv")
	time.Sleep(500 * time.Millisecond) // the watch is registered before the writes
	if _, err := c.Put(ctx, "w/1", "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "w/1", "uno"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, "w/1"); err != nil {
		t.Fatal(err)
	}
	w.WaitOutput("DELETE\nw/1\nuno\nw/1\n\n", 10*time.Second)
	if got, want := w.Output(), "PUT\nw/1\none\nPUT\nw/1\none\nw/1\nuno\nDELETE\nw/1\nuno\nw/1\n\n"; got != want {
		t.Fatalf("watch output %q, want %q", got, want)
	}
	w.Signal(os.Interrupt)
	w.Wait(10 * time.Second)

	// A quiet watch with --progress-notify hears the current revision.
	p := StartCtl(t, ours, nil, ep, "watch", "quiet", "--progress-notify")
	p.WaitOutput("progress notify: 4\n", 10*time.Second)
	p.Signal(os.Interrupt)
	p.Wait(10 * time.Second)

	// Interactive: two watches and a progress request, all on one stream.
	i := StartCtl(t, ours, nil, ep, "watch", "-i")
	i.Send("watch i/a\nwatch i/b --prev-kv -- sh -c 'echo hook $ETCD_WATCH_KEY=$ETCD_WATCH_VALUE'\n")
	time.Sleep(500 * time.Millisecond)
	if _, err := c.Put(ctx, "i/a", "A"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "i/b", "B"); err != nil {
		t.Fatal(err)
	}
	i.WaitOutput("PUT\ni/a\nA\n", 10*time.Second)
	i.WaitOutput(`hook "i/b"="B"`, 10*time.Second)
	i.Send("progress\n")
	i.WaitOutput("progress notify: 6\n", 10*time.Second)
	i.CloseStdin()
	if code, out := i.Wait(10 * time.Second); code != 3 || !strings.Contains(out, "Error: error reading watch request line: EOF") {
		t.Fatalf("interactive watch at end of input: exit %d\n%s", code, out)
	}

	// A failing command ends interactive mode at once (as upstream), with input still open.
	f := StartCtl(t, ours, nil, ep, "watch", "-i")
	f.Send("watch f/a -- false\n")
	time.Sleep(500 * time.Millisecond)
	if _, err := c.Put(ctx, "f/a", "x"); err != nil {
		t.Fatal(err)
	}
	if code, out := f.Wait(10 * time.Second); code != 1 || !strings.Contains(out, `Error: command ["false"] error (exit status 1)`) {
		t.Fatalf("interactive watch with a failing command: exit %d\n%s", code, out)
	}
}

// A second lock holder waits for the first; an exec'd command runs while the lock is held and its
// exit status is etcdctl's; an election observer sees each leader in turn.
func TestEtcdctlLockAndElect(t *testing.T) {
	ours := Binary(t, "etcdctl")
	m := NewMember(t)
	m.Start()
	ep := "--endpoints=" + m.ClientURL
	c := m.Client()
	ctx := Ctx(t)

	first := StartCtl(t, ours, nil, ep, "lock", "L")
	first.WaitOutput("L/", 10*time.Second)
	second := StartCtl(t, ours, nil, ep, "lock", "L", "--", "sh", "-c", `echo "holding $ETCD_LOCK_KEY"; exit 7`)
	time.Sleep(time.Second)
	if out := second.Output(); out != "" {
		t.Fatalf("second locker ran while the first held the lock: %q", out)
	}
	first.Signal(os.Interrupt)
	if code, out := first.Wait(10 * time.Second); code != 0 {
		t.Fatalf("first locker on SIGINT: exit %d\n%s", code, out)
	}
	code, out := second.Wait(10 * time.Second)
	if code != 7 || !strings.Contains(out, "holding L/") {
		t.Fatalf("second locker: exit %d\n%s", code, out)
	}
	if r, err := c.Get(ctx, "L/", clientv3.WithPrefix()); err != nil || r.Count != 0 {
		t.Fatalf("lock keys left behind: %v %v", r, err)
	}

	observer := StartCtl(t, ours, nil, ep, "elect", "-l", "E")
	alice := StartCtl(t, ours, nil, ep, "elect", "E", "alice")
	alice.WaitOutput("alice\n", 10*time.Second)
	observer.WaitOutput("alice\n", 10*time.Second)
	bob := StartCtl(t, ours, nil, ep, "elect", "E", "bob")
	time.Sleep(time.Second)
	if strings.Contains(bob.Output(), "bob") {
		t.Fatal("bob was elected while alice leads")
	}
	alice.Signal(os.Interrupt)
	if code, out := alice.Wait(10 * time.Second); code != 0 {
		t.Fatalf("alice on SIGINT: exit %d\n%s", code, out)
	}
	bob.WaitOutput("bob\n", 10*time.Second)
	observer.WaitOutput("bob\n", 10*time.Second)
	bob.Signal(os.Interrupt)
	observer.Signal(os.Interrupt)
	if code, out := observer.Wait(10 * time.Second); code != 0 {
		t.Fatalf("observer on SIGINT: exit %d\n%s", code, out)
	}
}

// check perf passes a healthy member at the small load and removes its keys; with keys already
// under the prefix it refuses to start.
func TestEtcdctlCheckPerf(t *testing.T) {
	ours := Binary(t, "etcdctl")
	m := NewMember(t)
	m.Start()
	ep := "--endpoints=" + m.ClientURL
	code, out := ctl(t, ours, "", ep, "check", "perf", "--duration=4s", "--auto-compact")
	for _, want := range []string{"PASS: Throughput is ", "PASS: Slowest request took ", "PASS: Stddev is ", "Compacted with revision ", "\nPASS\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("check perf: exit %d, no %q in\n%s", code, want, out)
		}
	}
	c := m.Client()
	r, err := c.Get(Ctx(t), "/etcdctl-check-perf/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != 0 {
		t.Fatalf("check perf left keys: %v %v", r, err)
	}
	// About 150 writes a second for 4 seconds, then one delete: the revision says they happened.
	if r.Header.Revision < 500 {
		t.Fatalf("check perf wrote too little: revision %d", r.Header.Revision)
	}
	if _, err := c.Put(Ctx(t), "/mine/x", "v"); err != nil {
		t.Fatal(err)
	}
	code, out = ctl(t, ours, "", ep, "check", "perf", "--prefix=/mine/", "--duration=1s")
	if code != 3 || !strings.Contains(out, `Error: prefix "/mine/" has keys. Delete with 'etcdctl del --prefix /mine/' first`) {
		t.Fatalf("check perf on a used prefix: exit %d\n%s", code, out)
	}
}

// bashCompleteLine completes its argument as bash would with cobra's script loaded: the line
// split into COMP_WORDS at blanks, with "=" a word of its own (it is in COMP_WORDBREAKS).
const bashCompleteLine = `source /usr/share/bash-completion/bash_completion || exit 9
source <(etcdctl completion bash) || exit 9
line="$1"; COMP_LINE="$line"; COMP_POINT=${#line}; COMP_WORDS=()
for w in $line; do
  if [[ "$w" == *=* ]]; then COMP_WORDS+=("${w%%=*}" "=" "${w#*=}"); else COMP_WORDS+=("$w"); fi
done
[[ "$line" =~ [[:space:]]$ ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]}-1))
compopt() { :; } # only valid inside a real completion
__start_etcdctl
echo "${COMPREPLY[*]}"`

// etcdctl's completion is cobra's, as upstream's: the bash script completes the same lines to
// the same words as upstream 3.7.3's, the hidden __complete command (which the zsh, fish and
// PowerShell scripts call) answers the same, and the zsh script registers in real zsh.
func TestEtcdctlCompletion(t *testing.T) {
	ours, up := Binary(t, "etcdctl"), UpstreamBinary(t, "etcdctl")
	upDir := t.TempDir()
	if err := os.Symlink(up, filepath.Join(upDir, "etcdctl")); err != nil {
		t.Fatal(err)
	}
	bash := func(bin, line string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", bashCompleteLine, "complete", line)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash completion of %q with %s: %v\n%s", line, bin, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for line, want := range map[string]string{
		"etcdctl mem":                      "member",
		"etcdctl member ":                  "add list promote remove update",
		"etcdctl lease time":               "timetolive",
		"etcdctl --endpoints x endpoint s": "status",
		"etcdctl watch --prev":             "--prev-kv",
		"etcdctl completion ":              "bash fish powershell zsh",
		"etcdctl check ":                   "datascale perf",
		"etcdctl get k --write-out=js":     "",
	} {
		o, u := bash(ours, line), bash(filepath.Join(upDir, "etcdctl"), line)
		if o != u || o != want {
			t.Errorf("bash completion of %q: ours %q, upstream %q, want %q", line, o, u, want)
		}
	}
	for _, words := range [][]string{
		{"get", "k", "-w", ""}, {"get", "k", "--write-out=js"}, {"mem"}, {"member", ""}, {"completion", ""},
		{"--endpoints", "x", "endpoint", "s"}, {"watch", "--prev"},
	} {
		_, _, o := runCLI(t, ours, append([]string{"__complete"}, words...)...)
		_, _, u := runCLI(t, up, append([]string{"__complete"}, words...)...)
		if o != u || !strings.Contains(o, "\n:") {
			t.Errorf("__complete %q:\n ours     %q\n upstream %q", words, o, u)
		}
	}

	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Fatalf("zsh is needed to test the zsh completion script (.ci/run installs it): %v", err)
	}
	script := `autoload -U compinit && compinit -u || exit 9
source <(etcdctl completion zsh) || exit 9
[[ ${_comps[etcdctl]} == _etcdctl ]] || { echo "not registered"; exit 9; }`
	cmd := exec.Command(zsh, "-f", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(ours)+":"+os.Getenv("PATH"), "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("zsh completion script: %v %s", err, out)
	}
}
