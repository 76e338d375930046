// Package ui is the web page of rukpakctl ui: server-rendered HTML (Go
// templates, html/template, embedded) over the cluster as the user who
// runs it sees it, with a small embedded script that reloads the page when
// a watch reports a change. It adds no server-side component: every read,
// SelfSubjectAccessReview and approval goes to the API server with the
// client it is given (the user's kubeconfig).
//
// A request goes through, in order:
//
//  1. the guard (guard.go): the Host header must name this server (DNS
//     rebinding), the path must start with /t/TOKEN, the per-run random
//     token (another local user or a web page does not know it), and a
//     POST must come from this origin and carry the page's CSRF token;
//     every answer carries a Content-Security-Policy that allows only this
//     server's own script and style, no referrer to other origins, and no
//     framing;
//  2. the page's loader (load.go) reads what it shows from the API server;
//  3. pure functions (views.go) turn the objects into view models:
//     states, timelines, rows;
//  4. the templates (templates/) render them; html/template escapes every
//     value, so content from the cluster (annotations, messages, names:
//     bundle content is untrusted) is text, never markup.
//
// The pages: the overview of every BundleDeployment the user may list
// (held and failed first, filters by state, class, namespace and text),
// one BundleDeployment (conditions, sources and pins, the timeline of its
// revisions and events, its installed objects with the manager's health
// probes' verdict, its annotations), and the review of a held
// revision (objects, side-by-side diffs, RBAC gained and lost, API
// surface) with the Approve button: shown only when a
// SelfSubjectAccessReview allows verb approve, it calls approval.Approve,
// as rukpakctl approve does, and shows the API server's refusal as it is.
// With ReadOnly the page writes nothing.
//
// Live updates (changes.go): one watch per kind (BundleDeployments,
// Bundles) feeds a Hub, which counts changes and knows whose they are;
// /events streams a server-sent event per change (of one BundleDeployment
// and its Bundles, for its own pages), and the script then fetches the
// page it shows once and swaps its content. A page records the count
// before it reads the cluster and reloads when the stream, once open,
// says another: a change between the two is not lost. Nothing polls.
//
// Glossary: a revision is a Bundle a BundleDeployment stamped out; held
// means awaiting approval (Installed False, reason AwaitingApproval).
package ui
