package ui

import "testing"

func TestHubCoalescesAndCounts(t *testing.T) {
	h := &Hub{}
	ch, stop := h.Subscribe("")
	h.Notify("a")
	h.Notify("b")
	if got := h.Version(); got != 2 {
		t.Errorf("Version = %d after two changes, want 2", got)
	}
	<-ch
	select {
	case <-ch:
		t.Error("two changes were delivered as two values, want one pending value")
	default:
	}
	stop()
	h.Notify("a") // no subscriber left: must not block
	select {
	case <-ch:
		t.Error("a value after the subscription ended")
	default:
	}
}

func TestHubFollowsOneBundleDeployment(t *testing.T) {
	h := &Hub{}
	ch, stop := h.Subscribe("a")
	defer stop()
	h.Notify("b")
	select {
	case <-ch:
		t.Error("a change of b reached a page of a")
	default:
	}
	h.Notify("a")
	<-ch
	h.Notify("") // whose is not known: every page reloads
	<-ch
}
