package transport

import "time"

// Upstream's defaults, and floors, for --raft-read-timeout and --raft-write-timeout.
const (
	DefaultConnReadTimeout  = 5 * time.Second
	DefaultConnWriteTimeout = 5 * time.Second
)
