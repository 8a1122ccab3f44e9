// Package discovery will hold v3 discovery bootstrap of new clusters and the discovery service binary.
package discovery
