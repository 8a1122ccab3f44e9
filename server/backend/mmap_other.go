//go:build !linux

package backend

// mmapFlags: MAP_POPULATE is Linux's alone.
const mmapFlags = 0
