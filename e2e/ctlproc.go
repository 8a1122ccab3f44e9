package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// CtlProc is a long-running etcdctl (watch, lock, elect): its combined output is collected while
// it runs, and the test decides when to signal it.
type CtlProc struct {
	t     testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	out   bytes.Buffer
	done  chan struct{}
	code  int
}

type procWriter struct{ p *CtlProc }

func (w procWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.out.Write(b)
}

// StartCtl starts bin with args and extra environment variables; its stdin stays open until
// CloseStdin.
func StartCtl(t testing.TB, bin string, env []string, args ...string) *CtlProc {
	t.Helper()
	p := &CtlProc{t: t, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = procWriter{p}, procWriter{p}
	in, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = in
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		p.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// Output is what the process has printed so far.
func (p *CtlProc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Send writes s to the process's stdin.
func (p *CtlProc) Send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, s); err != nil {
		p.t.Fatal(err)
	}
}

// CloseStdin ends the process's input.
func (p *CtlProc) CloseStdin() { p.stdin.Close() }

// WaitOutput waits until the output contains want, failing the test after timeout.
func (p *CtlProc) WaitOutput(want string, timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.Output(), want) {
		if time.Now().After(deadline) {
			p.t.Fatalf("%v: no %q within %v; output so far:\n%s", p.cmd.Args, want, timeout, p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Settle waits until the output has not changed for quiet (at most max in all): for streams
// whose last line is not known in advance.
func (p *CtlProc) Settle(quiet, max time.Duration) {
	deadline := time.Now().Add(max)
	last, since := p.Output(), time.Now()
	for time.Now().Before(deadline) && time.Since(since) < quiet {
		time.Sleep(20 * time.Millisecond)
		if o := p.Output(); o != last {
			last, since = o, time.Now()
		}
	}
}

// Signal sends sig to the process unless it has already exited (its exit status then tells).
func (p *CtlProc) Signal(sig os.Signal) {
	p.t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatal(err)
	}
}

// Wait waits for the process to exit and returns its exit status (-1 when a signal ended it)
// and output.
func (p *CtlProc) Wait(timeout time.Duration) (int, string) {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code, p.Output()
	case <-time.After(timeout):
		p.t.Fatalf("%v did not exit within %v; output:\n%s", p.cmd.Args, timeout, p.Output())
		return 0, ""
	}
}
