package assess

import (
	"context"
	"crypto/tls"
	"etcdx/upgradelab/cluster"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Endpoints is how to reach a live cluster, as etcdctl's flags say it.
type Endpoints struct {
	Endpoints []string
	TLS       *tls.Config // nil: plain
	Username  string
	Password  string
	// Timeout bounds each request.
	Timeout time.Duration
}

// CollectLive asks the cluster for its member list and alarms, and every member for its status,
// its /version and its quota; it changes nothing. A member that does not answer stays in the
// facts without Live.
func CollectLive(ctx context.Context, ep Endpoints) (Facts, error) {
	var f Facts
	if ep.Timeout == 0 {
		ep.Timeout = 5 * time.Second
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: ep.Endpoints, TLS: ep.TLS, Username: ep.Username, Password: ep.Password,
		DialTimeout: ep.Timeout, Logger: zap.NewNop()})
	if err != nil {
		return f, fmt.Errorf("connect to %s: %w", strings.Join(ep.Endpoints, ","), err)
	}
	defer cli.Close()

	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, ep.Timeout) }
	cctx, cancel := call()
	// Serializable: a cluster that lost quorum still lists its members.
	list, err := cli.MemberList(cctx, clientv3.WithSerializable())
	cancel()
	if err != nil {
		return f, fmt.Errorf("member list from %s: %w", strings.Join(ep.Endpoints, ","), err)
	}

	// Each member's status, first through the endpoints given (the advertised client URLs may
	// not be reachable from here), then through its advertised URLs.
	status := map[uint64]*clientv3.StatusResponse{}
	via := map[uint64]string{}
	ask := func(endpoint string) {
		cctx, cancel := call()
		defer cancel()
		st, err := cli.Status(cctx, endpoint)
		if err != nil || st.Header == nil {
			return
		}
		if _, seen := status[st.Header.MemberId]; !seen {
			status[st.Header.MemberId], via[st.Header.MemberId] = st, endpoint
		}
	}
	for _, e := range ep.Endpoints {
		ask(e)
	}
	answered := map[string]bool{}
	for _, e := range via {
		answered[e] = true
	}
	for _, e := range ep.Endpoints {
		if !answered[e] {
			f.Unreachable = append(f.Unreachable, e)
		}
	}
	for _, m := range list.Members {
		for _, u := range m.ClientURLs {
			if status[m.ID] == nil {
				ask(u)
			}
		}
	}

	hc := &http.Client{Timeout: ep.Timeout, Transport: &http.Transport{TLSClientConfig: ep.TLS}}
	for _, m := range list.Members {
		mem := Member{Name: m.Name, ID: fmt.Sprintf("%x", m.ID), Learner: m.IsLearner, Listed: true}
		if mem.Name == "" {
			mem.Name = mem.ID // added but never started
		}
		if st := status[m.ID]; st != nil {
			l := &Live{Endpoint: via[m.ID], Version: st.Version, StorageVersion: st.StorageVersion, DBSize: st.DbSize,
				DBSizeInUse: st.DbSizeInUse, Quota: st.DbSizeQuota, RaftIndex: st.RaftIndex, AppliedIndex: st.RaftAppliedIndex,
				Leader: st.Leader == m.ID, Errors: st.Errors}
			base := httpBase(via[m.ID], ep.TLS != nil)
			if v, err := cluster.GetVersions(ctx, hc, base); err == nil {
				l.ClusterVersion = v.Cluster
				if l.StorageVersion == "" {
					l.StorageVersion = v.Storage
				}
			}
			if mt, err := cluster.GetMetrics(ctx, hc, base); err == nil {
				l.Metrics = &mt
				if l.Quota == 0 { // 3.5 reports its quota only as a metric
					l.Quota = mt.QuotaBytes
				}
			}
			if st.DowngradeInfo != nil && st.DowngradeInfo.Enabled {
				f.Downgrade = &Downgrade{Target: st.DowngradeInfo.TargetVersion}
			}
			if l.ClusterVersion != "" && (f.ClusterVersion == "" || l.Leader) {
				f.ClusterVersion = l.ClusterVersion
			}
			mem.Live = l
		}
		f.Members = append(f.Members, mem)
	}
	sort.Slice(f.Members, func(i, j int) bool { return f.Members[i].Name < f.Members[j].Name })

	cctx, cancel = call()
	alarms, err := cli.AlarmList(cctx)
	cancel()
	if err != nil {
		return f, fmt.Errorf("alarm list: %w", err)
	}
	for _, a := range alarms.Alarms {
		f.Alarms = append(f.Alarms, Alarm{Member: fmt.Sprintf("%x", a.MemberID), Type: a.Alarm.String()})
	}
	return f, nil
}

// httpBase is the URL an endpoint's HTTP handlers answer on.
func httpBase(endpoint string, secure bool) string {
	if strings.Contains(endpoint, "://") {
		return strings.TrimSuffix(endpoint, "/")
	}
	if secure {
		return "https://" + endpoint
	}
	return "http://" + endpoint
}
