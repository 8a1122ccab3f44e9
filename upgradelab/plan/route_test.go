package plan

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestRoutePlan(t *testing.T) {
	hops := []RouteHop{{RoutePatch, "upstream-3.5.35", "3.5", false}, {RouteUpgrade, "3.6", "3.6", true}, {RouteUpgrade, "upstream-3.7.3", "3.7", false}}
	for _, tc := range []struct {
		name  string
		route Route
		want  []string // the steps, one YAML flow line each
	}{
		{"in place", Route{Name: "r", Members: 3, Start: "upstream-3.5.17", StartLevel: "3.5", Hops: hops}, []string{
			`expect: {cluster: "3.5", server: "3.5"}`,
			`replace: {order: leader-last, version: upstream-3.5.35}`,
			`expect: {cluster: "3.5", server: "3.5", storage: "3.5"}`,
			`replace: {order: leader-last, version: "3.6"}`,
			`expect: {cluster: "3.6", server: "3.6", storage: "3.6"}`,
			`snapshot: {}`,
			`replace: {order: leader-last, version: upstream-3.7.3}`,
			`expect: {cluster: "3.7", server: "3.7", storage: "3.7"}`,
		}},
		{"rolling replacement", Route{Name: "r", Members: 2, Start: "3.6", StartLevel: "3.6", Hops: hops[2:], Replacement: true}, []string{
			`expect: {cluster: "3.6", server: "3.6"}`,
			`add: {learner: true, version: upstream-3.7.3}`, `promote: m3`, `remove: m1`,
			`add: {learner: true, version: upstream-3.7.3}`, `promote: m4`, `remove: m2`,
			`expect: {cluster: "3.7", server: "3.7", storage: "3.7"}`,
		}},
		{"down, one minor at a time", Route{Name: "r", Members: 3, Start: "3.7", StartLevel: "3.7",
			Hops: []RouteHop{{RouteDowngrade, "3.6", "3.6", false}, {RouteDowngrade, "upstream-3.5.35", "3.5", false}}}, []string{
			`expect: {cluster: "3.7", server: "3.7"}`,
			`downgrade: {action: validate, version: "3.6"}`, `downgrade: {action: enable, version: "3.6"}`,
			`expect: {cluster: "3.6", storage: "3.6"}`, `replace: {order: leader-last, version: "3.6"}`,
			`expect: {cluster: "3.6", server: "3.6", storage: "3.6"}`,
			`downgrade: {action: validate, version: "3.5"}`, `downgrade: {action: enable, version: "3.5"}`,
			`expect: {cluster: "3.5", storage: "3.5"}`, `replace: {order: leader-last, version: upstream-3.5.35}`,
			`expect: {cluster: "3.5", server: "3.5", storage: "3.5"}`,
		}},
		{"from 3.4: no storage version until 3.6", Route{Name: "r", Members: 1, Start: "debian-3.4.23", StartLevel: "3.4",
			Hops: []RouteHop{{RouteUpgrade, "3.5", "3.5", false}}}, []string{
			`expect: {cluster: "3.4", server: "3.4"}`,
			`replace: {order: leader-last, version: "3.5"}`,
			`expect: {cluster: "3.5", server: "3.5", storage: "3.5"}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.route.Plan()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range p.Steps {
				b, err := yaml.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, flow(string(b)))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// flow turns a one-step YAML document into one line: "kind: {k: v, ...}" or "kind: v".
func flow(doc string) string {
	lines := strings.Split(strings.TrimSpace(doc), "\n")
	if len(lines) == 1 {
		return lines[0]
	}
	var fields []string
	for _, l := range lines[1:] {
		fields = append(fields, strings.TrimSpace(l))
	}
	return lines[0] + " {" + strings.Join(fields, ", ") + "}"
}

func TestRouteRefusesNothingToDo(t *testing.T) {
	if _, err := (Route{Name: "r", Members: 3, Start: "3.7"}).Plan(); err == nil {
		t.Fatal("a route without hops made a plan")
	}
	if _, err := (Route{Name: "r", Members: 3, Start: "3.7", Hops: []RouteHop{{"sideways", "3.7", "3.7", false}}}).Plan(); err == nil {
		t.Fatal("a hop of an unknown kind made a plan")
	}
}
