module etcdx/e2e

go 1.26.0
