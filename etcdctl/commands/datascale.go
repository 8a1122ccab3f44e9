package commands

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"etcdx/etcdctl/cli"
)

// datascaleLoad is one of upstream's check datascale models: how many key-values of which size
// the clients write.
type datascaleLoad struct {
	keys, kvSize, clients int
}

var datascaleLoads = map[string]datascaleLoad{
	"s": {10000, 1024, 50}, "m": {100000, 1024, 200}, "l": {1000000, 1024, 500}, "xl": {3000000, 1024, 1000},
}

// checkDatascale is upstream's check datascale: the memory the first endpoint's process grows by
// while it takes the load's key-values, read from its /metrics before and after. The keys are
// deleted afterwards (compacted and defragmented when asked).
func (e *env) checkDatascale(cfg datascaleLoad, prefix string, autoCompact, autoDefrag bool) error {
	clients, closeAll, err := e.newClients(cfg.clients)
	if err != nil {
		return err
	}
	defer closeAll()
	if err := e.ensureEmptyPrefix(clients[0], prefix); err != nil {
		return err
	}
	ep := clients[0].Endpoints()[0]
	before, err := e.residentMemory(ep)
	if err != nil {
		e.out.Println("FAIL: Could not read process_resident_memory_bytes before the put operations.")
		return &cli.Error{Code: cli.ExitError, Err: err}
	}
	e.out.Printf("Start data scale check for work load [%v key-value pairs, %v bytes per key-value, %v concurrent clients].\n", cfg.keys, cfg.kvSize, cfg.clients)
	ops := make(chan clientv3.Op, cfg.clients)
	wait := runWorkers(clients, ops)
	// Keys as upstream: a random varint in half the size, the value the other half.
	key, value := make([]byte, cfg.kvSize/2), string(make([]byte, cfg.kvSize/2))
	for i := 0; i < cfg.keys; i++ {
		binary.PutVarint(key, rand.Int64N(math.MaxInt64))
		ops <- clientv3.OpPut(prefix+string(key), value)
	}
	close(ops)
	_, errs := wait()
	after, err := e.residentMemory(ep)
	if err != nil {
		e.out.Println("FAIL: Could not read process_resident_memory_bytes after the put operations.")
		return &cli.Error{Code: cli.ExitError, Err: err}
	}
	if err := e.cleanupPerf(clients[0], prefix, autoCompact, autoDefrag); err != nil {
		return err
	}
	if len(errs) > 0 {
		e.out.Println("FAIL: too many errors")
		for msg, n := range errs {
			e.out.Printf("FAIL: ERROR(%v) -> %d\n", msg, n)
		}
		return &cli.Error{Code: cli.ExitError, Err: fmt.Errorf("%d kinds of write errors", len(errs))}
	}
	mb := (after - before) / (1024 * 1024)
	e.out.Printf("PASS: Approximate system memory used : %v MB.\n", strconv.FormatFloat(mb, 'f', 2, 64))
	return nil
}

// residentMemory reads process_resident_memory_bytes from an endpoint's /metrics, over TLS
// with the client's certificate when the endpoint is https.
func (e *env) residentMemory(endpoint string) (float64, error) {
	url := endpoint
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		url = "http://" + url
	}
	hc := &http.Client{Timeout: e.g.commandTimeout}
	if strings.HasPrefix(url, "https://") {
		s, err := e.spec([]string{endpoint})
		if err != nil {
			return 0, err
		}
		cfg, err := clientv3.NewClientConfig(s, nil)
		if err != nil {
			return 0, err
		}
		hc.Transport = &http.Transport{TLSClientConfig: cfg.TLS}
	}
	resp, err := hc.Get(url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "process_resident_memory_bytes "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s/metrics has no process_resident_memory_bytes", url)
}
