package memlimit

import (
	"math"
	"testing"
)

func TestNearLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                     string
		live, limit              int64
		reported                 bool
		wantReport, wantReported bool
	}{
		{name: "far below", live: 50 * mib, limit: 256 * mib},
		{name: "reaches the share", live: 205 * mib, limit: 256 * mib, wantReport: true, wantReported: true},
		{name: "over the limit", live: 417 * mib, limit: 256 * mib, wantReport: true, wantReported: true},
		{name: "still near: reported once", live: 230 * mib, limit: 256 * mib, reported: true, wantReported: true},
		{name: "between the shares stays reported", live: 190 * mib, limit: 256 * mib, reported: true, wantReported: true},
		{name: "between the shares, not reported, stays quiet", live: 190 * mib, limit: 256 * mib},
		{name: "falls well below: armed again", live: 170 * mib, limit: 256 * mib, reported: true},
		{name: "no limit", live: 417 * mib, limit: math.MaxInt64},
		{name: "limit unset", live: 417 * mib, limit: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report, reported := nearLimit(tc.live, tc.limit, tc.reported)
			if report != tc.wantReport || reported != tc.wantReported {
				t.Errorf("nearLimit(%d MiB, %d MiB, %v) = %v, %v; want %v, %v", tc.live/mib, tc.limit/mib, tc.reported, report, reported, tc.wantReport, tc.wantReported)
			}
		})
	}
}
