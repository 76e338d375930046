package main

import "testing"

func TestCheckLoopback(t *testing.T) {
	for _, tc := range []struct {
		address     string
		allowRemote bool
		ok          bool
	}{
		{"127.0.0.1:0", false, true},
		{"[::1]:8089", false, true},
		{"localhost:8089", false, true},
		{"0.0.0.0:8089", false, false},
		{":8089", false, false},
		{"10.0.0.5:8089", false, false},
		{"10.0.0.5:8089", true, true},
		{"no-port", false, false},
	} {
		if err := checkLoopback(tc.address, tc.allowRemote); (err == nil) != tc.ok {
			t.Errorf("checkLoopback(%q, %v) = %v, want ok %v", tc.address, tc.allowRemote, err, tc.ok)
		}
	}
}
