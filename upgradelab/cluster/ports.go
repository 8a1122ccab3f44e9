package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
)

// Ports come from below the kernel's ephemeral range (32768 and up here), so outgoing
// connections, which take ephemeral ports, cannot grab one between allocation and use.
const (
	portLow  = 20000
	portHigh = 32000
)

var nextPort atomic.Int64

// FreePort returns a loopback port below the ephemeral range that is free now and has not been
// handed out before by this process.
func FreePort() (int, error) {
	nextPort.CompareAndSwap(0, int64(portLow+rand.IntN(2000)))
	for i := 0; i < portHigh-portLow; i++ {
		p := int(nextPort.Add(1))
		if p >= portHigh {
			nextPort.Store(portLow)
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, errors.New("no free port below the ephemeral range")
}

// FreeURL is http://127.0.0.1:<FreePort>.
func FreeURL() (string, error) {
	p, err := FreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://127.0.0.1:%d", p), nil
}
