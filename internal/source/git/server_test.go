package git

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
)

// repoPath is the path every test server serves its repository at.
const repoPath = "/repo.git"

// serverOpts are the behaviours of a test git server.
type serverOpts struct {
	noPeel       bool   // do not advertise peeled tags (go-git's server does not)
	noWantByHash bool   // do not advertise allow-reachable-sha1-in-want
	user, pass   string // require basic auth (HTTP)
	tls          bool   // serve HTTPS (HTTP)
	ssh          bool   // serve SSH instead of HTTP
	failUploads  bool   // fail every upload-pack request (after recording it)
	realGit      bool   // serve with git http-backend (skipped without git)
}

// upload records one upload-pack request.
type upload struct {
	wants []plumbing.Hash
	depth int // 0: the full history
}

// uploadPack serves git-upload-pack from a go-git repository with go-git's
// server package. go-git's server neither peels tags, nor advertises
// allow-reachable-sha1-in-want (it accepts any want), nor supports shallow
// fetches; uploadPack adds the advertisements real servers make and answers
// a shallow request with the full history (the client only learns of fewer
// shallow commits), recording what was asked for.
type uploadPack struct {
	opts serverOpts
	repo storer.Storer

	mu       sync.Mutex
	requests int // HTTP requests and SSH sessions
	uploads  []upload
}

// Load returns the repository at repoPath.
func (u *uploadPack) Load(ep *transport.Endpoint) (storer.Storer, error) {
	if ep.Path != repoPath {
		return nil, transport.ErrRepositoryNotFound
	}
	return u.repo, nil
}

func (u *uploadPack) count() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.requests++
}

// stats returns the number of requests and the uploads so far.
func (u *uploadPack) stats() (int, []upload) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests, append([]upload(nil), u.uploads...)
}

func (u *uploadPack) session(path string) (transport.UploadPackSession, error) {
	return server.NewServer(u).NewUploadPackSession(&transport.Endpoint{Path: path}, nil)
}

// advertise returns the references of the repository at path.
func (u *uploadPack) advertise(ctx context.Context, path string) (*packp.AdvRefs, error) {
	sess, err := u.session(path)
	if err != nil {
		return nil, err
	}
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, err
	}
	if err := ar.Capabilities.Add(capability.Shallow); err != nil {
		return nil, err
	}
	if !u.opts.noWantByHash {
		if err := ar.Capabilities.Add(capability.AllowReachableSHA1InWant); err != nil {
			return nil, err
		}
	}
	if !u.opts.noPeel {
		for name, h := range ar.References {
			if tag, err := object.GetTag(u.repo, h); err == nil && strings.HasPrefix(name, "refs/tags/") {
				ar.Peeled[name] = tag.Target
			}
		}
	}
	return ar, nil
}

// record records the upload-pack request req.
func (u *uploadPack) record(req *packp.UploadPackRequest) upload {
	rec := upload{wants: append([]plumbing.Hash(nil), req.Wants...)}
	if d, ok := req.Depth.(packp.DepthCommits); ok {
		rec.depth = int(d)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.uploads = append(u.uploads, rec)
	return rec
}

// upload answers the upload-pack request req for the repository at path,
// writing the response to w. A shallow request is answered with an empty
// shallow-update section and the full history.
func (u *uploadPack) upload(ctx context.Context, path string, req *packp.UploadPackRequest, w io.Writer) error {
	rec := u.record(req)
	if u.opts.failUploads {
		return errors.New("upload-pack failed")
	}
	req.Depth = packp.DepthCommits(0)
	req.Capabilities.Delete(capability.Shallow) // unknown to go-git's server
	sess, err := u.session(path)
	if err != nil {
		return err
	}
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	if rec.depth > 0 {
		if err := pktline.NewEncoder(w).Flush(); err != nil {
			return err
		}
	}
	return resp.Encode(w)
}

// ServeHTTP serves git's smart HTTP protocol (upload-pack only).
func (u *uploadPack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.count()
	if u.opts.user != "" {
		user, pass, ok := r.BasicAuth()
		if !ok || user != u.opts.user || pass != u.opts.pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
	}
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs"):
		if r.URL.Query().Get("service") != transport.UploadPackServiceName {
			http.Error(w, "only upload-pack is served", http.StatusForbidden)
			return
		}
		u.serveRefs(w, r, strings.TrimSuffix(r.URL.Path, "/info/refs"))
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/"+transport.UploadPackServiceName):
		u.servePack(w, r, strings.TrimSuffix(r.URL.Path, "/"+transport.UploadPackServiceName))
	default:
		http.NotFound(w, r)
	}
}

func (u *uploadPack) serveRefs(w http.ResponseWriter, r *http.Request, path string) {
	ar, err := u.advertise(r.Context(), path)
	if errors.Is(err, transport.ErrRepositoryNotFound) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ar.Prefix = [][]byte{[]byte("# service=" + transport.UploadPackServiceName), pktline.Flush}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
	_ = ar.Encode(w)
}

func (u *uploadPack) servePack(w http.ResponseWriter, r *http.Request, path string) {
	req := packp.NewUploadPackRequest()
	if err := req.Decode(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var buf bytes.Buffer
	err := u.upload(r.Context(), path, req, &buf)
	if errors.Is(err, transport.ErrRepositoryNotFound) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
	_, _ = w.Write(buf.Bytes())
}
