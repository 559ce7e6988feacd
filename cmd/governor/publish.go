package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/publish"
)

func (a *app) publishCmd() *cobra.Command {
	var lease string
	cmd := &cobra.Command{
		Use:   "publish SRC DST",
		Short: "Put a file at DST, never overwriting one and never showing a partial file",
		Long: `publish copies SRC (- for standard input) to a temporary file in DST's
directory, fsyncs it, links it to DST with link(2), which fails if DST exists
(nothing is ever overwritten, not even a file a racing writer has just
created), fsyncs the directory and removes the temporary name. Whenever it
stops, killed with SIGKILL included, DST is absent or complete: never
partial. SRC may also be a pipe, as <(cmd) gives. DST gets SRC's permission
bits (0666 from standard input or a pipe), less the umask.

Temporary files are named .governor-publish.HOST.PID.START.RAND.tmp. One left
by a publisher that was killed is removed by the next publish into the same
directory, once that writer is proven dead on this host; the temporary file
of a live publisher, another host or another boot is never removed.

Without hard links (exFAT, FAT: link fails with EPERM, ENOTSUP), the
temporary file is renamed to DST instead, with renameat2(RENAME_NOREPLACE)
(macOS: renamex_np RENAME_EXCL), which refuses an existing DST as link does.
Where that is unsupported too, publish checks that DST is absent and then
renames: that last fallback cannot promise no-clobber, since a writer that
creates DST between the check and the rename is overwritten. --json reports
the method used: link, rename-noreplace or rename-checked.

--lease RESOURCE@LEASE_ID: the lease is checked through the backend just before
the link, and nothing is published (exit 122) if it is no longer held
(expired, released, taken over). The check cannot see a takeover in the short
window between it and the link: where the reader of DST can check, fence the
content too, with the lease's token or a number from 'governor seq next'.

Exit codes:
  0    published
  73   DST exists: nothing was written to it
  122  --lease is not held: nothing was published
  125  bad input, SRC unreadable, I/O error, backend unreachable`,
		Example: `  governor publish results.json /data/run-42/provenance.json
  producer | governor publish - out/report.txt
  governor publish --lease "$lease" build.tar artifacts/v$(governor seq next version --lease "$lease").tar`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dst := args[0], args[1]
			ctx := cmd.Context()
			var o publish.Options
			if lease != "" {
				// Only a check that the lease is held: the handle's secret
				// is accepted but not needed, as nothing changes the lease.
				g, h, err := a.openLease(ctx, lease, openOptions{})
				if err != nil {
					return err
				}
				defer g.Close()
				o.Lease = &publish.Lease{Governor: g, Resource: h.Resource, ID: h.ID}
			}
			var res publish.Result
			var err error
			if src == "-" {
				res, err = publish.Publish(ctx, a.stdin, dst, o)
			} else {
				res, err = publish.File(ctx, src, dst, o)
			}
			for _, s := range res.Stale {
				fmt.Fprintf(cmd.ErrOrStderr(), "governor: removed %s, left by a publisher that died\n", s)
			}
			switch {
			case errors.Is(err, publish.ErrExists):
				return exitWith(exitcode.Busy, err)
			case err != nil:
				return err // exitcode.For: a lost lease 122, else 125
			}
			if a.json {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"published": dst, "bytes": res.Bytes, "method": res.Method, "stale_removed": res.Stale})
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&lease, "lease", "", "publish only while this lease (RESOURCE@LEASE_ID) is held; exit 122 otherwise")
	return cmd
}
