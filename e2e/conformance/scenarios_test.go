package conformance

import (
	"reflect"
	"strings"
	"testing"
)

// The shape of upstream's robustness output under -test.v: scenarios one level down (their
// names hold slashes themselves), the exploratory failpoint one further, results printed when
// the top-level test ends.
const exploratoryOutput = `=== RUN   TestRobustnessExploratory
=== RUN   TestRobustnessExploratory/EtcdHighTraffic/ClusterOfSize1
    logger.go:146: 2026-11-29T05:33:25.021Z	INFO	spawning process
=== RUN   TestRobustnessExploratory/EtcdHighTraffic/ClusterOfSize1/KillFailpoint
    logger.go:146: 2026-11-29T05:33:25.021Z	INFO	Triggering failpoint	{"failpoint": "KillFailpoint"}
=== RUN   TestRobustnessExploratory/EtcdHighTraffic/ClusterOfSize3
=== RUN   TestRobustnessExploratory/EtcdHighTraffic/ClusterOfSize3/blackholePeerNetwork
    logger.go:146: 2026-11-29T05:33:25.021Z	INFO	Triggering failpoint	{"failpoint": "blackholePeerNetwork"}
    main_test.go:118: failed linearization
    main_test.go:118: second error
--- FAIL: TestRobustnessExploratory (60.10s)
    --- PASS: TestRobustnessExploratory/EtcdHighTraffic/ClusterOfSize1 (20.00s)
        --- PASS: TestRobustnessExploratory/EtcdHighTraffic/ClusterOfSize1/KillFailpoint (19.50s)
    --- FAIL: TestRobustnessExploratory/EtcdHighTraffic/ClusterOfSize3 (40.10s)
        --- FAIL: TestRobustnessExploratory/EtcdHighTraffic/ClusterOfSize3/blackholePeerNetwork (39.00s)
FAIL
`

func TestParseScenarios(t *testing.T) {
	for _, tc := range []struct {
		name, output, test, suffix string
		want                       []Result
	}{
		{
			name: "exploratory, second run", output: exploratoryOutput, test: "TestRobustnessExploratory", suffix: " #2",
			want: []Result{
				{Test: "TestRobustnessExploratory/EtcdHighTraffic/ClusterOfSize1 #2", Status: "pass", Seconds: 20, Failpoint: "KillFailpoint"},
				{Test: "TestRobustnessExploratory/EtcdHighTraffic/ClusterOfSize3 #2", Status: "fail", Seconds: 40.1, Failpoint: "blackholePeerNetwork",
					Failed: []string{"TestRobustnessExploratory/EtcdHighTraffic/ClusterOfSize3/blackholePeerNetwork"}, Reason: "main_test.go:118: failed linearization"},
			},
		},
		{
			name: "one regression scenario", test: "TestRobustnessRegression/Issue14370",
			output: "=== RUN   TestRobustnessRegression\n=== RUN   TestRobustnessRegression/Issue14370\n" +
				"    logger.go:146: x	INFO	Triggering failpoint	{\"failpoint\": \"raftBeforeSave=panic\"}\n" +
				"--- PASS: TestRobustnessRegression (3.68s)\n    --- PASS: TestRobustnessRegression/Issue14370 (3.66s)\nPASS\n",
			want: []Result{{Test: "TestRobustnessRegression/Issue14370", Status: "pass", Seconds: 3.66, Failpoint: "raftBeforeSave=panic"}},
		},
		{
			name: "nothing ended (the process died first)", test: "TestRobustnessRegression",
			output: "=== RUN   TestRobustnessRegression\n=== RUN   TestRobustnessRegression/Issue14370\npanic: test timed out after 1m0s\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseScenarios(strings.NewReader(tc.output), tc.test, tc.suffix)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}
