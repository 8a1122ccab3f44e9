package lab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"etcdx/upgradelab/runtimes"
)

// crashTimeout bounds the wait for a member to reach the failpoint it is to crash at.
const crashTimeout = 30 * time.Second

// crash arms the failpoint at on m with gofail's panic term, through the member's GOFAIL_HTTP
// endpoint as upstream's robustness tooling does, and waits for the member to die there. A
// member that does not get there in time has the failpoint cleared again and the step fails.
func crash(ctx context.Context, m runtimes.Member, at string) error {
	base := m.Failpoints()
	if base == "" {
		return fmt.Errorf("the runtime gives the member no failpoint endpoint")
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/"+at, strings.NewReader("panic"))
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("it serves no failpoints at %s (a failpoint build is needed: make build-failpoints, then --bin-dir bin/failpoints): %w", base, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("set failpoint %s: %s: %s", at, resp.Status, strings.TrimSpace(string(body)))
	}
	wctx, cancel := context.WithTimeout(ctx, crashTimeout)
	defer cancel()
	if err := m.WaitExit(wctx); err != nil {
		if req, rerr := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodDelete, base+"/"+at, nil); rerr == nil {
			if resp, derr := hc.Do(req); derr == nil {
				resp.Body.Close()
			}
		}
		return fmt.Errorf("did not reach failpoint %s within %v (cleared it again): %w", at, crashTimeout, err)
	}
	return nil
}
