module etcdx/discovery

go 1.26.0
