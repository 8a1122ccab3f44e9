// Package upgradelab runs real multi-version etcd clusters through upgrade and downgrade plans
// under a workload and judges the result: plan (YAML plans and the built-ins), cluster (members
// as local processes, also the harness e2e and the bench start their clusters with), workload
// (traffic and its checks: lost writes, linearizability), lab (runs plans, reports and traces),
// cli and cmd/upgradelab (the binary). Members run as processes; a container runtime is not
// built yet.
package upgradelab
