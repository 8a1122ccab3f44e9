package register

import (
	"reflect"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestCheck(t *testing.T) {
	w := func(c int, v string, call, ret int64) Op {
		return Op{Client: c, Key: "k", Write: true, Value: v, Call: call, Return: ret}
	}
	r := func(c int, v string, call, ret int64) Op {
		return Op{Client: c, Key: "k", Value: v, Call: call, Return: ret}
	}
	for _, c := range []struct {
		name string
		ops  []Op
		want porcupine.CheckResult
	}{
		{"a read after a write sees it", []Op{w(0, "1", 0, 1), r(1, "1", 2, 3)}, porcupine.Ok},
		{"a stale read", []Op{w(0, "1", 0, 1), w(0, "2", 2, 3), r(1, "1", 4, 5)}, porcupine.Illegal},
		{"a read of a value never written", []Op{r(1, "x", 0, 1)}, porcupine.Illegal},
		{"an unknown write may land late", []Op{w(0, "1", 0, 1), w(0, "2", 2, Unknown), r(1, "1", 4, 5), r(1, "2", 6, 7)}, porcupine.Ok},
		{"keys are judged apart", []Op{w(0, "1", 0, 1), {Client: 1, Key: "other", Call: 2, Return: 3}}, porcupine.Ok},
	} {
		if got := Check(c.ops, time.Second); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestResolveUnknown(t *testing.T) {
	applied := func(key, value string) (int64, bool) {
		rev, ok := map[string]int64{"a": 5, "b": 9}[value]
		return rev, ok
	}
	ops := []Op{
		{Client: 0, Key: "k", Write: true, Value: "a", Call: 10, Return: Unknown},     // took effect at 5
		{Client: 0, Key: "k", Write: true, Value: "never", Call: 20, Return: Unknown}, // never took effect
		{Client: 1, Key: "k", Value: "a", Call: 30, Return: 40, Rev: 6},
		{Client: 2, Key: "k", Value: "a", Call: 25, Return: 35, Rev: 5},
		{Client: 1, Key: "k", Write: true, Value: "b", Call: 50, Return: Unknown}, // at 9: no one saw 9
		{Client: 2, Key: "k", Write: true, Value: "c", Call: 60, Return: 70, Rev: 8},
	}
	got := ResolveUnknown(ops, applied)
	want := []Op{
		{Client: 0, Key: "k", Write: true, Value: "a", Call: 10, Return: 35, Rev: 5}, // before the earliest return of revision >= 5
		ops[2], ops[3],
		{Client: 1, Key: "k", Write: true, Value: "b", Call: 50, Return: Unknown, Rev: 9},
		ops[5],
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if Check(got, time.Second) != porcupine.Ok {
		t.Fatal("the resolved history is not linearizable")
	}
}
