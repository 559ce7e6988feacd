package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show or check the effective configuration",
		Long: `config shows the effective configuration and where each value came from, or
checks it: see 'governor config show --help' and 'governor config check --help'.

Exit codes: 0 this help; those of each subcommand.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print every effective value and where it came from (default, file, env, flag)",
		Long: `show prints the configuration file in use, the backend in use, and every effective
value with its source: flag > env (GOVERNOR_*) > file > default. --json prints
{"file", "backend", "limits", "values": [{"key", "value", "source"}]}.

Exit codes: 0 printed; 125 bad flags or a bad configuration (see 'governor config check').`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := a.load()
			if err != nil {
				return err
			}
			c := l.Config
			if a.json {
				type entry struct {
					Key    string `json:"key"`
					Value  string `json:"value"`
					Source string `json:"source"`
				}
				es := []entry{}
				for _, e := range l.Show() {
					es = append(es, entry{e.Key, e.Value, string(e.Source)})
				}
				return writeJSON(cmd.OutOrStdout(), map[string]any{"file": l.File, "backend": c.ResolvedBackend(),
					"limits": c.Limits(), "values": es})
			}
			w := cmd.OutOrStdout()
			file := l.File
			if file == "" {
				file = "(none found)"
			}
			fmt.Fprintf(w, "config file: %s\nbackend in use: %s\n\n", file, c.ResolvedBackend())
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
			for _, e := range l.Show() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, e.Value, e.Source)
			}
			tw.Flush()
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "check",
		Short: "Validate the configuration; exit 125 naming every bad key, value and line",
		Long: `check validates the configuration file, the environment and the flags, naming the
file, line, key and allowed values of every problem. --json prints {"ok": true,
"file", "limits"} or {"ok": false, "problems": [...]}.

Exit codes: 0 the configuration is valid; 125 a problem was found (each is named), or bad flags.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := a.load()
			if err != nil {
				var ee *exitError
				if a.json && errors.As(err, &ee) {
					problems := strings.Split(ee.err.Error(), "\n")
					_ = writeJSON(cmd.OutOrStdout(), map[string]any{"ok": false, "problems": problems})
				}
				return err
			}
			if a.json {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"ok": true, "file": l.File, "limits": l.Config.Limits()})
			}
			file := l.File
			if file == "" {
				file = "no config file found; defaults, env and flags"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: %s\n", file)
			return nil
		},
	})
	return cmd
}
