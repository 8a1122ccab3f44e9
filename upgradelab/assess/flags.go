package assess

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// Flag sources ReadFlags tells apart.
const (
	SourceConfigFile = "etcd config file"
	SourceManifest   = "static pod manifest"
	SourceEnvFile    = "environment file"
)

// ReadFlags reads a member's flags, by name without dashes, from an etcd YAML config file
// (--config-file), a Kubernetes static pod manifest (kubeadm's etcd.yaml: the etcd
// container's command) or an environment file (/etc/default/etcd, a systemd EnvironmentFile:
// ETCD_* variables and DAEMON_ARGS). It returns which of the three it was.
func ReadFlags(path string) (map[string]string, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	if isEnvFile(b) {
		flags, err := envFlags(b)
		return flags, SourceEnvFile, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, "", fmt.Errorf("%s is neither YAML (an etcd config file or a static pod manifest) nor an environment file: %w", path, err)
	}
	if doc["kind"] == "Pod" {
		flags, err := manifestFlags(b)
		return flags, SourceManifest, err
	}
	return configFlags(doc), SourceConfigFile, nil
}

var envLine = regexp.MustCompile(`^(export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)

// isEnvFile says whether every line that is not blank or a comment assigns a variable (a file
// of comments only, as Debian ships /etc/default/etcd, is one that sets nothing).
func isEnvFile(b []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !envLine.MatchString(line) {
			return false
		}
	}
	return true
}

func envFlags(b []byte) (map[string]string, error) {
	flags := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		m := envLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		name, value := m[2], unquote(strings.TrimSpace(m[3]))
		switch {
		case name == "DAEMON_ARGS" || name == "ETCD_OPTS":
			for k, v := range argFlags(strings.Fields(value)) {
				flags[k] = v
			}
		case strings.HasPrefix(name, "ETCD_"):
			flags[strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, "ETCD_")), "_", "-")] = value
		}
	}
	return flags, sc.Err()
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// manifestFlags reads the etcd container's command of a static pod manifest.
func manifestFlags(b []byte) (map[string]string, error) {
	var pod struct {
		Spec struct {
			Containers []struct {
				Name    string   `json:"name"`
				Command []string `json:"command"`
				Args    []string `json:"args"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pod); err != nil {
		return nil, fmt.Errorf("static pod manifest: %w", err)
	}
	for _, c := range pod.Spec.Containers {
		cmd := append(append([]string(nil), c.Command...), c.Args...)
		if c.Name == "etcd" || len(cmd) > 0 && strings.HasSuffix(cmd[0], "etcd") {
			return argFlags(cmd), nil
		}
	}
	return nil, fmt.Errorf("static pod manifest: no etcd container")
}

// argFlags reads Go-style flags (--name=value, -name value, a bare boolean) from a command line.
func argFlags(args []string) map[string]string {
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue // the command itself
		}
		name := strings.TrimLeft(a, "-")
		if k, v, ok := strings.Cut(name, "="); ok {
			flags[k] = v
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			flags[name] = args[i+1]
			i++
			continue
		}
		flags[name] = "true"
	}
	return flags
}

// configFlags reads an etcd config file's keys, which are the flags' names; the TLS sections
// hold the --cert-file family (client) and the --peer-cert-file family (peer).
func configFlags(doc map[string]any) map[string]string {
	flags := map[string]string{}
	for k, v := range doc {
		section, nested := v.(map[string]any)
		switch {
		case k == "client-transport-security" && nested:
			for sk, sv := range section {
				flags[sk] = scalar(sv)
			}
		case k == "peer-transport-security" && nested:
			for sk, sv := range section {
				flags["peer-"+sk] = scalar(sv)
			}
		case v != nil:
			flags[k] = scalar(v)
		}
	}
	return flags
}

func scalar(v any) string {
	switch t := v.(type) {
	case []any:
		parts := make([]string, len(t))
		for i, p := range t {
			parts[i] = scalar(p)
		}
		return strings.Join(parts, ",")
	case float64:
		if t == float64(int64(t)) {
			return fmt.Sprintf("%d", int64(t))
		}
	}
	return fmt.Sprint(v)
}

// AddFlags reads a member's flags from path and attaches them to the member its --name
// names, or to a new entry when no listed member has that name.
func AddFlags(f *Facts, path string) error {
	flags, source, err := ReadFlags(path)
	if err != nil {
		return err
	}
	from := source + " " + path
	name := flags["name"]
	for i := range f.Members {
		if name != "" && f.Members[i].Name == name {
			f.Members[i].Flags, f.Members[i].FlagsFrom = flags, from
			return nil
		}
	}
	if name == "" {
		name = path
	}
	f.Members = append(f.Members, Member{Name: name, Flags: flags, FlagsFrom: from})
	return nil
}
