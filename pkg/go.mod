module etcdx/pkg

go 1.26.0
