package cluster

import (
	"strings"
	"testing"
)

func TestLostKeysCatchesAPlantedLoss(t *testing.T) {
	acked := map[string]string{"a": "1", "b": "2", "c": "3"}
	if lost := LostKeys(acked, map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}); len(lost) != 0 {
		t.Errorf("nothing lost, got %v", lost)
	}
	if lost := LostKeys(acked, map[string]string{"a": "1", "c": "x"}); strings.Join(lost, ",") != "b,c" {
		t.Errorf("lost %v, want b (missing) and c (other value)", lost)
	}
}
