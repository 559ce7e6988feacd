// Package publish puts a file at a path without ever clobbering what is
// there and without anyone ever seeing it partly written: `governor
// publish`.
//
// [File] and [Publish] write the content to a temporary file in the
// destination's directory, fsync it, and link(2) it to the destination,
// which fails if the destination exists (nothing is overwritten, not even
// by a writer racing this one). The directory is then fsynced and the
// temporary name removed, in every case. A process killed at any point
// leaves either no destination or the complete one, never a partial file.
//
// Where the file system has no hard links (exFAT, FAT and the like: link
// fails with EPERM, ENOTSUP or ENOSYS), the temporary file is renamed
// instead: with renameat2(RENAME_NOREPLACE) on Linux and renamex_np
// (RENAME_EXCL) on macOS, which refuse an existing destination as link
// does; where that is unsupported too, by checking that the destination is
// absent and renaming. That last fallback cannot promise no-clobber: a
// writer that creates the destination between the check and the rename is
// overwritten. [Result.Method] says which way was taken.
//
// # Temporary files
//
// A temporary file is named .governor-publish.HOST.PID.START.RAND.tmp:
// HOST is a digest of this machine's boot and PID namespace, PID and START
// the writing process and its start time. A process killed while
// publishing leaves it behind; the next publish into the same directory
// removes it once it proves that process dead (same HOST, and the PID gone
// or reused by a process with another start time). The temporary file of
// a live publisher, or of another host or boot, is never removed.
//
// # Leases
//
// With [Options.Lease], the lease is checked through the backend just
// before the link, and the publish is refused with
// [governor.ErrLeaseLost] if it is no longer held. That narrows, but does
// not close, the window in which a holder that has lost its lease could
// still publish: a takeover between the check and the link goes unseen.
// Where the consumer can check, pair it with fencing: put the lease's
// token or a number from `governor seq next` in the content or the name.
package publish
