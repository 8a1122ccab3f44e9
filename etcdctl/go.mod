module etcdx/etcdctl

go 1.26.0
