package etcdmain

import (
	"errors"
	"flag"
	"fmt"
)

// addDiscoveryFlags registers upstream's v3 and v2 discovery flags (v2 until 3.6), and its DNS
// ones so that setting them gets a clear refusal rather than "unknown flag".
func addDiscoveryFlags(fs *flag.FlagSet, fv *flagValues) {
	d := &fv.cfg.DiscoveryCfg
	fs.Var(listValue{&d.Endpoints}, "discovery-endpoints", "V3 discovery: List of gRPC endpoints of the discovery service.")
	fs.StringVar(&d.Token, "discovery-token", "", "V3 discovery: discovery token for the etcd cluster to be bootstrapped.")
	fs.DurationVar(&d.DialTimeout, "discovery-dial-timeout", d.DialTimeout, "V3 discovery: dial timeout for client connections.")
	fs.DurationVar(&d.RequestTimeout, "discovery-request-timeout", d.RequestTimeout, "V3 discovery: timeout for discovery requests (excluding dial timeout).")
	fs.DurationVar(&d.KeepAliveTime, "discovery-keepalive-time", d.KeepAliveTime, "V3 discovery: keepalive time for client connections.")
	fs.DurationVar(&d.KeepAliveTimeout, "discovery-keepalive-timeout", d.KeepAliveTimeout, "V3 discovery: keepalive timeout for client connections.")
	fs.BoolVar(&d.Secure.InsecureTransport, "discovery-insecure-transport", true, "V3 discovery: disable transport security for client connections.")
	fs.BoolVar(&d.Secure.InsecureSkipVerify, "discovery-insecure-skip-tls-verify", false, "V3 discovery: skip server certificate verification (for testing only).")
	fs.StringVar(&d.Secure.Cert, "discovery-cert", "", "V3 discovery: identify secure client using this TLS certificate file.")
	fs.StringVar(&d.Secure.Key, "discovery-key", "", "V3 discovery: identify secure client using this TLS key file.")
	fs.StringVar(&d.Secure.Cacert, "discovery-cacert", "", "V3 discovery: verify certificates of TLS-enabled secure servers using this CA bundle.")
	fs.StringVar(&d.Auth.Username, "discovery-user", "", "V3 discovery: username[:password] for authentication.")
	fs.StringVar(&d.Auth.Password, "discovery-password", "", "V3 discovery: password for authentication (if this option is used, --discovery-user shouldn't include password).")
	fs.StringVar(&fv.cfg.Durl, "discovery", "", "Discovery URL used to bootstrap the cluster for v2 discovery. Will be deprecated in v3.7, and be decommissioned in v3.8.")
	fs.StringVar(&fv.cfg.DProxy, "discovery-proxy", "", "HTTP proxy to use for traffic to discovery service. Will be deprecated in v3.7, and be decommissioned in v3.8.")
	fs.String("discovery-srv", "", "DNS domain used to bootstrap initial cluster (not supported).")
	fs.String("discovery-srv-name", "", "Service name to query when using DNS discovery (not supported).")
}

// checkDiscoveryFlags refuses what this server does not implement, naming the flag.
func checkDiscoveryFlags(set map[string]bool, fv *flagValues) error {
	if fv.discoveryFallback == "proxy" {
		return fmt.Errorf("v2 proxy is deprecated, and --discovery-fallback can't be configured as %q", "proxy")
	}
	if fv.cfg.DProxy != "" && fv.cfg.DiscoveryCfg.EnabledAny() {
		return errors.New("both v2 discovery settings (discovery, discovery-proxy) " +
			"and v3 discovery settings (discovery-token, discovery-endpoints, discovery-cert, " +
			"discovery-key, discovery-cacert, discovery-user, discovery-password) are set")
	}
	for _, name := range []string{"discovery-srv", "discovery-srv-name"} {
		if f := fv.fs.Lookup(name); set[name] && f != nil && f.Value.String() != "" {
			return fmt.Errorf("--%s is not supported by this server: bootstrap with --initial-cluster, or with v3 discovery (--discovery-endpoints and --discovery-token)", name)
		}
	}
	return nil
}
