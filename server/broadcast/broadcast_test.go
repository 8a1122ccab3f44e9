package broadcast

import (
	"testing"
	"testing/synctest"
)

func TestNotifyWakesEveryWaiterOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Changes
		before := b.Next()
		woken := make(chan int, 3)
		for i := range 3 {
			go func() { <-before; woken <- i }()
		}
		synctest.Wait()
		if len(woken) != 0 {
			t.Fatal("a waiter woke before any change")
		}
		b.Notify()
		synctest.Wait()
		if len(woken) != 3 {
			t.Fatalf("%d of 3 waiters woke at the change", len(woken))
		}
		after := b.Next()
		select {
		case <-after:
			t.Fatal("the channel taken after the change is already closed")
		default:
		}
		b.Notify()
		select {
		case <-after:
		default:
			t.Fatal("the next change did not close the channel taken before it")
		}
	})
}

// A change with no one waiting is not remembered: Next after it waits for the one after.
func TestNotifyWithoutWaitersIsNotKept(t *testing.T) {
	var b Changes
	b.Notify()
	select {
	case <-b.Next():
		t.Fatal("Next after a change nobody waited for is closed")
	default:
	}
}
