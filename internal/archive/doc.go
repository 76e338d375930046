// Package archive extracts untrusted tar streams (optionally gzip-compressed)
// into a directory without ever writing outside it.
//
// Extraction is a pipeline, entry by entry:
//
//  1. The stream is read through a context check and, for gzip streams, a
//     counter of compressed and uncompressed bytes that refuses streams
//     expanding more than Limits.MaxRatio times (gzip bombs).
//  2. Each entry is counted against Limits.MaxFiles, and device files and
//     FIFOs are refused.
//  3. Its name is cleaned (CleanEntryPath): absolute names and names that
//     climb out of the destination with ".." are refused.
//  4. With Options.Whiteouts, OCI/AUFS whiteout entries delete what earlier
//     layers wrote instead of being written themselves.
//  5. Its parent directories are checked one by one with Lstat (made when
//     missing): a parent that is a symbolic link is refused, so links are
//     never followed when writing.
//  6. It is written: directories as 0755, regular files as 0644 or 0755
//     (only the executable bit is kept; no setuid, no owners) within
//     Limits.MaxFileBytes and Limits.MaxBytes, symbolic links only when
//     their target stays inside the tree, hard links only to regular files
//     the archive wrote before, each counting its target's size against
//     Limits.MaxBytes again (whoever reads the tree reads it once per name).
//
// Every write goes through an os.Root opened on the destination, so even a
// check this package got wrong cannot make the kernel resolve a path
// outside it.
//
// Every refusal is a terminal failure (failure.Error with reason
// UnpackFailed) whose message names the entry and the rule it broke, such as
// `archive entry "../../etc/passwd": path escapes the destination`. A corrupt
// stream is a terminal failure too; errors reading the underlying stream
// (a broken connection) and a cancelled context are returned wrapped, as
// transient errors.
package archive
