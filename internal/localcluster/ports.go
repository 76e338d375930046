package localcluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// ports are the loopback ports one cluster listens on.
type ports struct {
	EtcdClient  int `json:"etcdClient"`
	EtcdPeer    int `json:"etcdPeer"`
	APIServer   int `json:"apiServer"`
	Controllers int `json:"controllerManager,omitempty"`
	Scheduler   int `json:"scheduler,omitempty"`
	Kwok        int `json:"kwok,omitempty"`
	Manager     int `json:"manager,omitempty"`
	// Content is the manager's content server (and upload endpoint).
	Content int `json:"content,omitempty"`
}

// freePorts returns n distinct ports that 127.0.0.1 can listen on now.
//
// Ports come from below the kernel's ephemeral range (so an outgoing
// connection cannot take one between the pick and the component's bind) at
// random (so clusters starting at the same moment rarely pick the same one;
// Up retries when they do). All listeners are held until every port is
// chosen, so the n ports are distinct.
func freePorts(n int) ([]int, error) {
	low, high := candidateRange()
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	out := make([]int, 0, n)
	for attempts := 0; len(out) < n; attempts++ {
		if attempts > 1000 {
			return nil, fmt.Errorf("no free loopback port found in %d-%d", low, high)
		}
		port := low + rand.IntN(high-low)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		listeners = append(listeners, l)
		out = append(out, port)
	}
	return out, nil
}

// candidateRange is [10000, start of the ephemeral range), or a fixed range
// when the ephemeral range cannot be read or leaves too little room.
func candidateRange() (int, int) {
	const low = 10000
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if fields := strings.Fields(string(data)); len(fields) == 2 {
			if start, err := strconv.Atoi(fields[0]); err == nil && start-low >= 4000 {
				return low, start
			}
		}
	}
	return 20000, 30000
}
