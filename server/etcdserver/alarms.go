package etcdserver

import (
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"etcdx/server/backend"
	"etcdx/server/schema"
)

// alarmStore keeps active alarms; the alarm bucket holds each as its encoded AlarmMember key.
type alarmStore struct {
	mu     sync.RWMutex
	alarms map[pb.AlarmType]map[uint64]bool
}

func loadAlarms(be *backend.Backend) (*alarmStore, error) {
	a := &alarmStore{alarms: map[pb.AlarmType]map[uint64]bool{}}
	err := be.View(func(tx *bolt.Tx) error {
		return tx.Bucket(schema.Alarm).ForEach(func(k, _ []byte) error {
			m, err := schema.ParseAlarmKey(k)
			if err != nil {
				return err
			}
			a.set(m.Alarm, m.MemberID, true)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("load alarms: %w", err)
	}
	return a, nil
}

func (a *alarmStore) set(t pb.AlarmType, member uint64, on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.alarms[t] == nil {
		a.alarms[t] = map[uint64]bool{}
	}
	if on {
		a.alarms[t][member] = true
	} else {
		delete(a.alarms[t], member)
	}
}

func (a *alarmStore) active(t pb.AlarmType) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return len(a.alarms[t]) > 0
}

// list returns active alarms of type t (NONE: all).
func (a *alarmStore) list(t pb.AlarmType) []*pb.AlarmMember {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []*pb.AlarmMember
	for typ, ms := range a.alarms {
		if t != pb.AlarmType_NONE && typ != t {
			continue
		}
		for id := range ms {
			out = append(out, &pb.AlarmMember{MemberID: id, Alarm: typ})
		}
	}
	return out
}

func (a *alarmStore) apply(b *backend.BatchTx, r *pb.AlarmRequest, self uint64) (*pb.AlarmResponse, error) {
	resp := &pb.AlarmResponse{Header: &pb.ResponseHeader{}}
	m := &pb.AlarmMember{MemberID: r.MemberID, Alarm: r.Alarm}
	key, err := schema.AlarmKey(m)
	if err != nil {
		return nil, err
	}
	switch r.Action {
	case pb.AlarmRequest_ACTIVATE:
		if r.Alarm == pb.AlarmType_NONE {
			return resp, nil
		}
		if err := b.Put(schema.Alarm, key, nil); err != nil {
			return nil, err
		}
		a.set(r.Alarm, r.MemberID, true)
		resp.Alarms = []*pb.AlarmMember{m}
	case pb.AlarmRequest_DEACTIVATE:
		a.mu.RLock()
		on := a.alarms[r.Alarm][r.MemberID]
		a.mu.RUnlock()
		if !on {
			return resp, nil
		}
		if err := b.Delete(schema.Alarm, key); err != nil {
			return nil, err
		}
		a.set(r.Alarm, r.MemberID, false)
		resp.Alarms = []*pb.AlarmMember{m}
	}
	return resp, nil
}

// replace takes over another alarm set (after a snapshot reload).
func (a *alarmStore) replace(o *alarmStore) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.alarms = o.alarms
}
