package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// pollInterval is how often readiness is checked; start-up time is the
// point of this package, so it is short.
const pollInterval = 50 * time.Millisecond

// errPortInUse marks a start-up failure caused by a port another program
// took between the pick and the bind; Up retries with new ports.
var errPortInUse = errors.New("port already in use")

// poll calls check every pollInterval until it returns true or an error,
// ctx ends, or timeout passes. what names the wait in errors.
func poll(ctx context.Context, timeout time.Duration, what string, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := check(ctx)
		if ok {
			return nil
		}
		var stop stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %w)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// stopError ends a poll at once.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }

// exited returns a stopError when p is no longer running, with its log's
// tail; a bind failure is marked errPortInUse.
func exited(p process) error {
	if p.alive() {
		return nil
	}
	tail := logTail(p.Log, 30)
	err := fmt.Errorf("%s exited during start-up; last lines of %s:\n%s", p.Name, p.Log, tail)
	if strings.Contains(tail, "address already in use") {
		err = fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return stopError{err}
}

// waitHTTP waits until GET url answers 200, failing early when p exits.
func waitHTTP(ctx context.Context, client *http.Client, p process, url string, timeout time.Duration) error {
	err := poll(ctx, timeout, p.Name+" at "+url, func(ctx context.Context) (bool, error) {
		if err := exited(p); err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, stopError{err}
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s answered %s", url, resp.Status)
		}
		return true, nil
	})
	if err != nil && p.alive() && ctx.Err() == nil { // timed out: exited() did not add the log
		err = fmt.Errorf("%w; last lines of %s:\n%s", err, p.Log, logTail(p.Log, 30))
	}
	return err
}

// apiServerReadyTimeout bounds the wait for the API server's /readyz.
const apiServerReadyTimeout = 60 * time.Second

// waitAPIServer waits until the API server recorded in s answers /readyz
// to the admin client, failing early when it exits.
func waitAPIServer(ctx context.Context, stateDir string, s *state) error {
	apiserver, ok := s.process("kube-apiserver")
	if !ok {
		return fmt.Errorf("no kube-apiserver recorded in %s", stateDir)
	}
	admin, err := adminClient(pki{dir: filepath.Join(stateDir, certsDir)})
	if err != nil {
		return err
	}
	return waitHTTP(ctx, admin, apiserver, s.Server+"/readyz", apiServerReadyTimeout)
}

// plainClient reaches plain HTTP endpoints and self-signed HTTPS ones (the
// controller manager's and scheduler's in-memory serving certificates).
func plainClient() *http.Client {
	return &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe of a self-signed server
			DisableKeepAlives: true,
		},
	}
}

// adminClient reaches the API server as the admin user.
func adminClient(p pki) (*http.Client, error) {
	caPEM, err := os.ReadFile(p.path(caCert))
	if err != nil {
		return nil, fmt.Errorf("reading CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificate in %s", p.path(caCert))
	}
	pair, err := tls.LoadX509KeyPair(p.path(adminCert), p.path(adminKey))
	if err != nil {
		return nil, fmt.Errorf("loading admin certificate: %w", err)
	}
	return &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		},
	}, nil
}
