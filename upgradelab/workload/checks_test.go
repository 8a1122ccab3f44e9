package workload

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestLinearizabilityCatchesAPlantedStaleRead(t *testing.T) {
	w := &Workload{}
	ms := func(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }
	w.ops = []Op{
		{Client: 0, Key: "r", Write: true, Value: "v1", Call: ms(0), Return: ms(10)},
		{Client: 1, Key: "r", Write: true, Value: "v2", Call: ms(20), Return: ms(30)},
		{Client: 2, Key: "r", Value: "v2", Call: ms(40), Return: ms(50)},
	}
	if v, _ := w.Linearizable(5 * time.Second); v != porcupine.Ok {
		t.Fatalf("a good history: %v", v)
	}
	// Read after v2 was acknowledged returns v1: stale.
	w.ops = append(w.ops, Op{Client: 2, Key: "r", Value: "v1", Call: ms(60), Return: ms(70)})
	if v, _ := w.Linearizable(5 * time.Second); v != porcupine.Illegal {
		t.Fatalf("a stale read: %v", v)
	}
}
