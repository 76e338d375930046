// Package git reads bundle content from a git repository over HTTPS, HTTP
// or SSH, with go-git: no git binary, no worktree, nothing on disk but the
// content itself.
//
// The source is a pipeline:
//
//  1. Floating: a source pinned to a commit (ref.commit or resolvedCommit)
//     is fixed; a branch or a tag is floating.
//  2. Resolve pins a branch or tag to a commit with one ls-remote. An
//     annotated tag is pinned to the commit it points to: the peeled
//     ("^{}") entry when the server advertises it, otherwise the tag is
//     fetched and peeled. A commit-pinned source makes no request at all.
//  3. Unpack fetches as little as it can into memory: a depth-1 fetch of
//     the branch or tag when it still points to the pinned commit,
//     otherwise a depth-1 fetch of the commit itself when the server allows
//     it (allow-reachable-sha1-in-want / allow-tip-sha1-in-want), otherwise
//     a full fetch of the ref (then of every branch and tag). It then
//     verifies the commit against the pin and writes the tree of the
//     source's directory (see writer): regular files and directories only,
//     symlinks refused, submodules skipped, within byte and file caps.
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
