package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestMembershipChanges(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	cl := c.Client()
	ctx := Ctx(t)
	for i := 0; i < 20; i++ {
		cl.Put(ctx, fmt.Sprintf("pre/%02d", i), "v")
	}

	// Add a learner and start it against the existing cluster.
	m4 := NewMember(t)
	m4.Name = "m4"
	m4.InitialCluster = c.Members[0].InitialCluster + ",m4=" + m4.PeerURL
	m4.Extra = []string{"--initial-cluster-state", "existing"}
	// A young cluster refuses it until every peer has been connected upstream's health interval.
	var add *clientv3.MemberAddResponse
	if err := retryUnhealthy(func() (err error) { add, err = cl.MemberAddAsLearner(ctx, []string{m4.PeerURL}); return err }); err != nil {
		t.Fatal(err)
	}
	if !add.Member.IsLearner || len(add.Members) != 4 {
		t.Fatalf("member add: %+v", add)
	}
	if _, err := cl.MemberAddAsLearner(ctx, []string{"http://127.0.0.1:1"}); !errors.Is(err, rpctypes.ErrTooManyLearners) {
		t.Fatalf("second learner: %v", err)
	}
	if _, err := cl.MemberAdd(ctx, []string{m4.PeerURL}); !errors.Is(err, rpctypes.ErrPeerURLExist) {
		t.Fatalf("duplicate peer URL: %v", err)
	}
	// A learner that has not started is not in sync: every member says so, the leader itself
	// and followers forwarding to it.
	for _, m := range c.Members {
		if _, err := m.Client().MemberPromote(ctx, add.Member.ID); !errors.Is(err, rpctypes.ErrMemberLearnerNotReady) {
			t.Fatalf("promote an unstarted learner through %s: %v", m.Name, err)
		}
	}
	m4.Start()
	lc := m4.Client()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r, err := lc.Get(ctx, "pre/", clientv3.WithPrefix(), clientv3.WithSerializable())
		if err == nil && r.Count == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("learner did not catch up: %+v %v\n%s", r, err, m4.LogTail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	const notForLearner = "etcdserver: rpc not supported for learner"
	if _, err := lc.Put(ctx, "from-learner", "x"); err == nil || !strings.Contains(err.Error(), notForLearner) {
		t.Fatalf("write on a learner: %v", err)
	}
	if _, err := lc.Get(ctx, "pre/00"); err == nil || !strings.Contains(err.Error(), notForLearner) {
		t.Fatalf("linearizable read on a learner: %v", err)
	}

	// Promote through any member (a follower forwards to the leader).
	var pr *clientv3.MemberPromoteResponse
	var err error
	deadline = time.Now().Add(15 * time.Second)
	for {
		pr, err = c.Members[1].Client().MemberPromote(ctx, add.Member.ID)
		if err == nil {
			break
		}
		if !errors.Is(err, rpctypes.ErrMemberLearnerNotReady) || time.Now().After(deadline) {
			t.Fatalf("promote: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, m := range pr.Members {
		if m.IsLearner {
			t.Fatalf("still a learner after promotion: %+v", m)
		}
	}
	if _, err := cl.MemberPromote(ctx, add.Member.ID); !errors.Is(err, rpctypes.ErrMemberNotLearner) {
		t.Fatalf("promote a voter: %v", err)
	}
	// The promoted member takes writes once it has applied its own promotion.
	deadline = time.Now().Add(5 * time.Second)
	for {
		_, err := lc.Put(ctx, "from-m4", "voter")
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), notForLearner) || time.Now().After(deadline) {
			t.Fatalf("write on the promoted member: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Remove m2: it stops by itself and the others carry on.
	m2 := c.Members[1]
	st, err := m2.Client().Status(ctx, m2.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	// Until m4 has been connected for the health interval the strict check refuses, as upstream.
	var rm *clientv3.MemberRemoveResponse
	deadline = time.Now().Add(10 * time.Second)
	for {
		rm, err = cl.MemberRemove(ctx, st.Header.MemberId)
		if err == nil || !errors.Is(err, rpctypes.ErrUnhealthy) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil || len(rm.Members) != 3 {
		t.Fatalf("member remove: %+v %v", rm, err)
	}
	code, err := m2.Wait(15 * time.Second)
	if err != nil || code != 0 || !strings.Contains(m2.Log(), "permanently removed") {
		t.Fatalf("removed member: exit %d %v\n%s", code, err, m2.LogTail(5))
	}
	if _, err := cl.MemberRemove(ctx, st.Header.MemberId); !errors.Is(err, rpctypes.ErrMemberNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
	if _, err := c.Members[0].Client().Put(ctx, "after-remove", "ok"); err != nil {
		t.Fatalf("write after removal: %v", err)
	}

	// Move m3 to a new peer port: update, restart on it, and the cluster still works.
	m3 := c.Members[2]
	st3, _ := m3.Client().Status(ctx, m3.ClientURL)
	newPeer := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	if _, err := c.Members[0].Client().MemberUpdate(ctx, st3.Header.MemberId, []string{newPeer}); err != nil {
		t.Fatal(err)
	}
	m3.Stop()
	m3.PeerURL = newPeer
	m3.Start()
	r, err := m3.Client().Get(ctx, "from-m4")
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("read through the moved member: %+v %v", r, err)
	}
	ml, _ := m3.Client().MemberList(ctx)
	for _, m := range ml.Members {
		if m.ID == st3.Header.MemberId && m.PeerURLs[0] != newPeer {
			t.Fatalf("member list after update: %+v", m)
		}
	}
}

// With one of three members down, removing a live voter would leave no connected quorum and
// adding a voter is refused; removing the dead member is allowed (upstream's strict check).
func TestStrictReconfigCheck(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	dead := c.Members[2]
	dead.Kill()
	live := c.Members[0]
	cl := live.Client()
	ids := map[string]uint64{}
	resp, err := cl.MemberList(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range resp.Members {
		ids[m.Name] = m.ID
	}
	time.Sleep(6 * time.Second) // past the health interval: the dead member's stream is gone
	if _, err := cl.MemberRemove(Ctx(t), ids["m2"]); err == nil || !strings.Contains(err.Error(), "unhealthy cluster") {
		t.Fatalf("removing a live voter with another one down: %v", err)
	}
	if _, err := cl.MemberAdd(Ctx(t), []string{"http://127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "unhealthy cluster") {
		t.Fatalf("adding a voter with one down: %v", err)
	}
	if _, err := cl.MemberAdd(Ctx(t), []string{"http://127.0.0.1:1"}); err == nil {
		t.Fatal("second add accepted")
	}
	if _, err := cl.MemberRemove(Ctx(t), ids["m3"]); err != nil {
		t.Fatalf("removing the dead member: %v", err)
	}
}

// Member changes sent in quick succession through different members all take effect or are
// refused, none is lost: raft turns a conf change into an empty entry while the leader has not
// applied the previous one, and the proposer must notice and propose it again.
func TestQuickSuccessiveMemberChanges(t *testing.T) {
	c := NewCluster(t, 3)
	c.Start()
	c.WaitPeersSettled()
	clients := []*clientv3.Client{c.Members[0].Client(), c.Members[1].Client(), c.Members[2].Client()}
	for i := 0; i < 6; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		url := fmt.Sprintf("http://127.0.0.1:%d", 1000+i)
		add, err := clients[i%3].MemberAddAsLearner(ctx, []string{url})
		if err != nil {
			cancel()
			t.Fatalf("round %d: add learner: %v", i, err)
		}
		start := time.Now()
		_, err = clients[(i+1)%3].MemberAddAsLearner(ctx, []string{url + "1"})
		if !errors.Is(err, rpctypes.ErrTooManyLearners) {
			cancel()
			t.Fatalf("round %d: second learner through another member after %v: %v", i, time.Since(start), err)
		}
		// The learner is gone before the next round; a member that has not applied the add yet
		// does not know it, so the remove goes through the member that added it.
		if _, err := clients[i%3].MemberRemove(ctx, add.Member.ID); err != nil {
			cancel()
			t.Fatalf("round %d: remove learner: %v", i, err)
		}
		cancel()
	}
}

// --max-learners raises upstream's limit of one learner; zero is refused, as upstream.
func TestMaxLearners(t *testing.T) {
	c := NewCluster(t, 3, "--max-learners", "2")
	c.Start()
	cl := c.Client()
	for i := 1; i <= 2; i++ {
		if err := retryUnhealthy(func() error {
			_, err := cl.MemberAddAsLearner(Ctx(t), []string{fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))})
			return err
		}); err != nil {
			t.Fatalf("learner %d with --max-learners 2: %v", i, err)
		}
	}
	if _, err := cl.MemberAddAsLearner(Ctx(t), []string{fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))}); !errors.Is(err, rpctypes.ErrTooManyLearners) {
		t.Fatalf("third learner with --max-learners 2: %v", err)
	}
	m := NewMember(t, "--max-learners", "0")
	if err := m.StartNoWait(); err != nil {
		t.Fatal(err)
	}
	if code, err := m.Wait(10 * time.Second); code == 0 || err != nil || !m.LogHas("--max-learners: 0 is invalid, value must be greater than 0") {
		t.Fatalf("--max-learners 0: exit %d, %v\n%s", code, err, m.LogTail(5))
	}
}

// TestLearnerAddWhileVotersAreDown: with --strict-reconfig-check (the default) a learner is added
// only while the member asked is connected to a quorum of the voters counting the newcomer as
// absent, as upstream 3.5 to 3.7 decide it: three voters with one down refuse, five with one down
// accept, five with two down refuse. Ours and upstream 3.7.3 answer alike.
func TestLearnerAddWhileVotersAreDown(t *testing.T) {
	for _, c := range []struct {
		voters, down int
		refused      bool
	}{{3, 1, true}, {5, 1, false}, {5, 2, true}} {
		for _, up := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d voters, %d down, upstream %v", c.voters, c.down, up), func(t *testing.T) {
				t.Parallel() // each waits for its peers to settle: the waits overlap
				cl := NewCluster(t, c.voters)
				if up {
					for _, m := range cl.Members {
						m.Bin = UpstreamBinary(t, "etcd")
					}
				}
				cl.Start()
				cl.WaitPeersSettled()
				for _, m := range cl.Members[c.voters-c.down:] {
					m.Kill()
				}
				if !c.refused {
					// A quorum is left: ask once it has a leader again (a killed leader leaves an election).
					cl.Leader(15 * time.Second)
				}
				_, err := cl.Members[0].Client().MemberAddAsLearner(Ctx(t), []string{fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))})
				if c.refused != (err != nil) || c.refused && !errors.Is(err, rpctypes.ErrUnhealthy) {
					t.Fatalf("learner add: %v, want refused %v (unhealthy cluster)", err, c.refused)
				}
			})
		}
	}
}
