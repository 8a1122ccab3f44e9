// Package upgradelab will run real multi-version clusters (containers where a Docker engine is
// present, processes otherwise) through upgrade and downgrade plans under workloads, with checks
// and OpenTelemetry traces.
package upgradelab
