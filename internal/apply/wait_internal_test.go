package apply

import (
	"testing"
	"time"
)

func TestNextEstablishPoll(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		want     time.Duration
	}{
		{name: "the first read", interval: establishPoll, want: 200 * time.Millisecond},
		{name: "doubles", interval: 400 * time.Millisecond, want: 800 * time.Millisecond},
		{name: "reaches the most", interval: 800 * time.Millisecond, want: establishPollMax},
		{name: "stays at the most", interval: establishPollMax, want: establishPollMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextEstablishPoll(tc.interval); got != tc.want {
				t.Errorf("nextEstablishPoll(%s) = %s, want %s", tc.interval, got, tc.want)
			}
		})
	}
}
