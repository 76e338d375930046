package ui

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/objdiff"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Differ returns what applying BundleDeployment name's spec as it stands
// (its newest revision, say a held one) would change, each object as it
// is and as it would be (rukpakctl diff's pipeline).
type Differ func(ctx context.Context, name string) ([]objdiff.Object, error)

// Options configure a Server.
type Options struct {
	// Client reads and writes as the user (required).
	Client client.Client
	// Token is the per-run token every path starts with (/t/TOKEN);
	// NewToken makes one (required).
	Token string
	// Hosts are the Host headers accepted (LoopbackHosts of the listening
	// address; required).
	Hosts []string
	// ReadOnly hides the Approve button and refuses approvals.
	ReadOnly bool
	// Differ computes the side-by-side diffs of a review; none are shown
	// without it.
	Differ Differ
	// DiffTimeout bounds one review's Differ (default 60s).
	DiffTimeout time.Duration
	// Changes feeds /events; without it pages are not live.
	Changes *Hub
	// Cluster names the cluster in the page header (the API server's URL).
	Cluster string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Server is the web page's HTTP handler. It is an http.Handler; every
// request goes through the guard first (guard.go).
type Server struct {
	opts  Options
	token string
	csrf  string
	hosts []string
	pages map[string]*template.Template
	mux   *http.ServeMux
}

var _ http.Handler = (*Server)(nil)

// New builds a Server from o.
func New(o Options) (*Server, error) {
	if o.Token == "" || len(o.Hosts) == 0 {
		return nil, errors.New("ui: a token and the accepted hosts are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DiffTimeout == 0 {
		o.DiffTimeout = 60 * time.Second
	}
	csrf, err := NewToken()
	if err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: o, token: o.Token, csrf: csrf, hosts: o.Hosts, pages: pages, mux: http.NewServeMux()}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("ui: embedded static files: %w", err)
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.overview)
	s.mux.HandleFunc("GET /bd/{name}", s.detail)
	s.mux.HandleFunc("GET /bd/{name}/review", s.review)
	s.mux.HandleFunc("POST /bd/{name}/approve", s.approve)
	s.mux.HandleFunc("GET /events", s.events)
	return s, nil
}

// Path is the path of the overview, with the token: open it on one of the
// accepted hosts.
func (s *Server) Path() string { return "/t/" + s.token + "/" }

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range []string{"overview", "detail", "review", "error"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("ui: parsing template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// page is what every page's layout shows.
type page struct {
	// Title is the page's title.
	Title string
	// Base is the path prefix with the token, for links.
	Base string
	// Cluster names the cluster.
	Cluster string
	// ReadOnly is set under --read-only.
	ReadOnly bool
	// Live is set when the page reloads on changes.
	Live bool
	// Version is the Hub's Version before the page read the cluster.
	Version uint64
	// Follows is the BundleDeployment whose changes reload the page; ""
	// for every one.
	Follows string
}

// page returns the layout data of a page titled title; call it before
// reading what the page shows.
func (s *Server) page(title string) page {
	p := page{Title: title, Base: "/t/" + s.token, Cluster: s.opts.Cluster, ReadOnly: s.opts.ReadOnly, Live: s.opts.Changes != nil}
	if p.Live {
		p.Version = s.opts.Changes.Version()
	}
	return p
}

// render executes page name with data; an error renders nothing partial.
func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// errorPage is a page that could not be shown, and why.
type errorPage struct {
	page
	Message string
}

// fail renders the error page for err with the status the API server's
// answer implies.
func (s *Server) fail(w http.ResponseWriter, title string, err error) {
	s.render(w, statusOf(err), "error", errorPage{page: s.page(title), Message: err.Error()})
}
