package localcluster

import "fmt"

// ContentServer returns the API server URL of the cluster running in
// stateDir and the base URL of its manager's content server (which also
// takes uploads), "" when the cluster runs no manager. rukpakctl sends
// tokens only to that content server, and only when its kubeconfig points
// at that API server.
func ContentServer(stateDir string) (apiServer, content string, err error) {
	c, err := Load(stateDir)
	if err != nil {
		return "", "", err
	}
	s, err := readState(c.StateDir)
	if err != nil {
		return "", "", fmt.Errorf("reading the state of %s: %w", c.StateDir, err)
	}
	if s == nil {
		return "", "", fmt.Errorf("%w in %s", ErrNotRunning, c.StateDir)
	}
	if s.Ports.Content == 0 {
		return c.Server, "", nil
	}
	return c.Server, "http://" + loopback(s.Ports.Content), nil
}
