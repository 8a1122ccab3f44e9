package etcdmain

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"etcdx/server/embed"
)

// fileAliases are config-file keys upstream reads under another name than the flag's.
var fileAliases = map[string]string{
	// upstream's file key for the deprecated catch-up setting is spelt so
	"experimental-snapshot-catch-up-entries": "experimental-snapshot-catchup-entries",
}

// securityKeys maps the keys of a *-transport-security section to flag names (without the
// "peer-" prefix the peer section adds).
var securityKeys = map[string]string{
	"cert-file": "cert-file", "key-file": "key-file", "client-cert-file": "client-cert-file",
	"client-key-file": "client-key-file", "client-cert-auth": "client-cert-auth",
	"trusted-ca-file": "trusted-ca-file", "auto-tls": "auto-tls",
	"allowed-cn": "cert-allowed-cn", "allowed-hostname": "cert-allowed-hostname",
	"skip-client-san-verification": "skip-client-san-verification",
}

// loadConfigFile reads upstream's YAML config file (keys are the flag names) into a fresh flag
// set, so a file value goes through the same parsing and checks as the flag. It returns the
// names set, and the keys it does not know.
func loadConfigFile(path string, fv *flagValues) (set map[string]bool, unknown []string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--config-file: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, nil, fmt.Errorf("--config-file %s: %w", path, err)
	}
	set = map[string]bool{}
	setFlag := func(key, name string, v any) error {
		f := fv.fs.Lookup(name)
		if f == nil {
			unknown = append(unknown, key)
			return nil
		}
		s, err := fileValue(f, v)
		if err == nil {
			err = fv.fs.Set(name, s)
		}
		if err != nil {
			return fmt.Errorf("--config-file %s: %s: %w", path, key, err)
		}
		set[name] = true
		return nil
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		v := raw[key]
		switch key {
		case "client-transport-security", "peer-transport-security":
			prefix := map[string]string{"client-transport-security": "", "peer-transport-security": "peer-"}[key]
			sec, ok := v.(map[string]any)
			if !ok && v != nil {
				return nil, nil, fmt.Errorf("--config-file %s: invalid %s", path, key)
			}
			for k, sv := range sec {
				name, known := securityKeys[k]
				if !known {
					unknown = append(unknown, key+"."+k)
					continue
				}
				if prefix == "" && name == "cert-allowed-hostname" {
					name = "client-cert-allowed-hostname"
				}
				if err := setFlag(key+"."+k, prefix+name, sv); err != nil {
					return nil, nil, err
				}
			}
		case "socket-options":
			opts, _ := v.(map[string]any)
			for k, sv := range opts {
				if err := setFlag(key+"."+k, "socket-"+k, sv); err != nil {
					return nil, nil, err
				}
			}
		case "discovery-config":
			if v == nil {
				continue
			}
			// Upstream's nested v3 discovery section decodes over the defaults.
			j, _ := json.Marshal(v)
			d := embed.NewConfig().DiscoveryCfg
			if err := json.Unmarshal(j, &d); err != nil {
				return nil, nil, fmt.Errorf("--config-file %s: discovery-config: %w", path, err)
			}
			fv.cfg.DiscoveryCfg = d
			set["discovery-endpoints"] = len(d.Endpoints) > 0
		default:
			name := key
			if a, ok := fileAliases[key]; ok {
				name = a
			}
			if name == "config-file" || name == "version" {
				unknown = append(unknown, key)
				continue
			}
			if err := setFlag(key, name, v); err != nil {
				return nil, nil, err
			}
		}
	}
	sort.Strings(unknown)
	return set, unknown, nil
}

// fileValue turns a decoded YAML value into the flag's text form. Durations in upstream's file
// are integers of nanoseconds (Go's encoding of time.Duration); "5s" is accepted too.
func fileValue(f *flag.Flag, v any) (string, error) {
	isDuration := isDurationFlag(f)
	switch x := v.(type) {
	case nil:
		return f.DefValue, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		if isDuration {
			return time.Duration(int64(x)).String(), nil
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case string:
		return x, nil
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, ","), nil
	default:
		return "", fmt.Errorf("unexpected value %v", v)
	}
}

// isDurationFlag tells duration flags apart by their default's form.
func isDurationFlag(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, ok = g.Get().(time.Duration)
	return ok
}
