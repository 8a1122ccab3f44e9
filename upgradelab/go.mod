module etcdx/upgradelab

go 1.26.0
