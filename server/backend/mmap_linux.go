package backend

import "syscall"

// mmapFlags reads the file ahead when it is mapped (as upstream on Linux), so rebuilding the
// index at start-up walks memory instead of faulting page by page.
const mmapFlags = syscall.MAP_POPULATE
