// Package git reads bundle content from a git repository over HTTPS, HTTP
// or SSH, with go-git: no git binary, no worktree, and fetched objects kept
// in a temporary bare repository on disk (next to the content, removed
// afterwards), never in memory.
//
// The source is a pipeline:
//
//  1. Floating: a source pinned to a commit (ref.commit or resolvedCommit)
//     is fixed; a branch, a tag or a semver constraint is floating.
//  2. Resolve pins a branch or tag to a commit with one ls-remote; for a
//     semver constraint, the newest tag of that ls-remote in it (package
//     versionrange), recorded as resolvedTag and fetched by on Unpack. An
//     annotated tag is pinned to the commit it points to: the peeled
//     ("^{}") entry when the server advertises it, otherwise the tag is
//     fetched and peeled. A commit-pinned source makes no request at all.
//  3. Unpack fetches as little as it can into a temporary repository on
//     disk: a depth-1 fetch of
//     the branch or tag when it still points to the pinned commit,
//     otherwise a depth-1 fetch of the commit itself when the server allows
//     it (allow-reachable-sha1-in-want / allow-tip-sha1-in-want), otherwise
//     a full fetch of the ref (then of every branch and tag). It then
//     verifies the commit against the pin and writes the tree of the
//     source's directory (see writer): regular files and directories only,
//     symlinks refused, submodules skipped, within byte and file caps.
//
// Every fetch is bounded (see limit.go and storage.go), because the server
// and the repository are untrusted:
//
//   - bytes received: over all requests of one Resolve or Unpack, counted
//     on the HTTP response bodies or on the SSH connection
//     (WithMaxFetchBytes, default 256 MiB);
//   - what a pack inflates to: each pack is kept in a file and read once,
//     inflating every object without keeping it, before go-git (whose
//     parser holds whole objects in memory) sees it; an object or a
//     delta's target over the tree cap (plus 4 MiB for commits and trees),
//     or all objects over four times that, refuse the pack (a compression
//     or delta bomb of a few megabytes);
//   - the tree written (WithMaxBytes, WithMaxFiles);
//   - time: the caller's context deadline (source.Registry.WithDeadline)
//     ends HTTP requests, and SSH connections are dialled by this package
//     (through a proxy dialer registered with golang.org/x/net/proxy) with
//     that deadline set on the connection, since go-git bounds only the
//     TCP connect of SSH, not its handshake.
//
// Going over a cap is a terminal ResourceLimit failure naming the
// repository and the cap.
//
// Credentials (a Secret in rukpak-system, read with credentials.Reader) are
// basic auth (username and password, or a token) for HTTP(S), and a private
// key with a mandatory known_hosts for SSH: host keys are always checked,
// and neither an SSH agent nor the manager's own ~/.ssh files are used.
//
// Errors that retrying cannot fix (authentication refused, repository,
// ref, commit or directory not found, unsafe content, caps exceeded) are
// terminal failures with a condition reason; network errors are returned
// as they are, to be retried.
package git
