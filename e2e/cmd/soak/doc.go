// Command soak runs the Kubernetes-shaped load (e2e/kubeload) at a fixed N for hours on three
// members of ours and three of upstream's at once, defragmenting every member on a schedule,
// and samples what could grow without bound: each member's resident memory, goroutines, open
// files, database size and in-use size, WAL and snapshot file counts, and the load's p99 per
// window. It writes a report with the slope of each series over the run's last half hour, ours
// beside upstream's, and a PNG plot of every series. `make soak HOURS=1` runs it.
//
// The files:
//
//	main.go     the flags and the run: both sides under the load, sampled per window
//	cluster.go  a side's three members, their defrags, each window's readings from /proc and the
//	            data dir
//	report.go   series, slopes over the last half hour, the report and its PNG plot
//	record.go   the run's settings and samples, saved as JSON after each window (--samples) and
//	            read back to write the report again (--report-from)
package main
