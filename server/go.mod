module etcdx/server

go 1.26.0

require (
	github.com/coreos/go-semver v0.3.1
	go.etcd.io/raft/v3 v3.6.0
)

require (
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
