module etcdx/etcdutl

go 1.26.0
