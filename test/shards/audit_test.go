package shards

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// auditEvent is what the test reads of an audit event.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	Code struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// writes tells whether the request writes: not a read, not a dry-run.
func (e auditEvent) writes() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return !strings.Contains(e.RequestURI, "dryRun=")
	}
	return false
}

func (e auditEvent) String() string {
	what := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		what += "/" + e.ObjectRef.Subresource
	}
	return fmt.Sprintf("%s: %s %s %s/%s (%d)", e.manager(), e.Verb, what, e.ObjectRef.Namespace, e.ObjectRef.Name, e.Code.Code)
}

// manager is the name of the manager that sent the request: its shard
// (the user agent's shard/NAME) or unsharded.
func (e auditEvent) manager() string {
	_, s, ok := strings.Cut(e.UserAgent, " shard/")
	if !ok {
		return unsharded
	}
	return s
}

// auditSize is how far the audit log has been written.
func auditSize(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// managerWrites returns the writes the managers (the user managerUser)
// finished, from offset on in the audit log.
func managerWrites(t *testing.T, offset int64) []auditEvent {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	var events []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line being written
		}
		if e.Stage == "ResponseComplete" && e.User.Username == managerUser && e.writes() {
			events = append(events, e)
		}
	}
	return events
}
