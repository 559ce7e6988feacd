package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor/safetext"
	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/view"
)

func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show or check the effective configuration",
		Example: `  governor config show
  governor config check
  governor config schema > exec-defaults.schema.json`,
		Long: `config shows the effective configuration and where each value came from, or
checks it: see 'governor config show --help' and 'governor config check --help'.

Exit codes: 0 this help; those of each subcommand.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print every effective value and where it came from (default, file, env, flag)",
		Example: `  governor config show
  governor config show --json`,
		Long: `show prints the configuration file in use, the backend in use, and every effective
value with its source: flag > env (GOVERNOR_*) > file > default, then, for every
resource configured or with state, the limit in force and where it came from:
"live" (set by 'governor limit', which wins over the configuration until cleared:
by whom and when), "asked" (by the processes that use it: exec-defaults.yaml,
--limit), "stale" (a run:join or provider:NAME the configuration no longer
defines, "not_configured" saying why: its stored limit is only the one last
asked for) or "configured" (never used yet); when the backend does not answer, a
line says so. --json prints {"file", "backend", "limits", "values": [{"key",
"value", "source"}], "limits_in_force": [{"resource", "configured", "in_force",
"source", "not_configured", "by", "set_at"}]} ("limits_in_force_error" when the backend did not
answer).

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
				out := map[string]any{"file": l.File, "backend": c.ResolvedBackend(), "limits": c.Limits(), "values": es}
				if lif, err := a.limitsInForce(cmd.Context()); err != nil {
					out["limits_in_force_error"] = err.Error()
				} else {
					out["limits_in_force"] = lif
				}
				return writeJSON(cmd.OutOrStdout(), out)
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
			lif, err := a.limitsInForce(cmd.Context())
			if err != nil {
				fmt.Fprintf(w, "\nlimits in force: not read: %s\n", safetext.Escape(err.Error()))
				return nil
			}
			if len(lif) == 0 {
				return nil
			}
			fmt.Fprintln(w)
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RESOURCE\tCONFIGURED\tIN FORCE\tFROM")
			for _, r := range lif {
				conf, from := "-", r.Source
				if r.Configured > 0 {
					conf = strconv.Itoa(r.Configured)
				}
				switch r.Source {
				case "live":
					from = fmt.Sprintf("live: set by %s at %s", dash(r.By), r.SetAt.Format(time.RFC3339))
				case "stale":
					from = "stale: the limit last asked for; " + r.NotConfigured
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", dash(r.Resource), conf, r.InForce, from)
			}
			tw.Flush()
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "check",
		Short: "Validate the configuration; exit 125 naming every bad key, value and line",
		Example: `  governor config check
  governor config check --config ./exec-defaults.yaml`,
		Long: `check validates the configuration file, the environment and the flags, naming the
file, line, key and allowed values of every problem. --json prints {"ok": true,
"file", "limits"} or {"ok": false, "problems": [...]}.

Exit codes: 0 the configuration is valid; 125 a problem was found (each is named), or bad flags.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := a.load()
			if err != nil {
				var ee *exitcode.Error
				if a.json && errors.As(err, &ee) {
					problems := strings.Split(ee.Err.Error(), "\n")
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
	cmd.AddCommand(configSchemaCmd())
	return cmd
}

// configSchemaCmd prints the JSON Schema of exec-defaults.yaml.
func configSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "schema",
		Short:   "Print the JSON Schema of exec-defaults.yaml, for editors",
		Example: `  governor config schema > exec-defaults.schema.json`,
		Long: `schema prints the JSON Schema (draft 2020-12) of exec-defaults.yaml, made from the
same schema 'config check' walks: every key and the shape of its value. The
repository keeps a copy, config/exec-defaults.schema.json (a test keeps it equal to
this output). Point an editor at it with the config's first line:

  # yaml-language-server: $schema=` + config.SchemaID + `

or a local copy: governor config schema > exec-defaults.schema.json, then
  # yaml-language-server: $schema=./exec-defaults.schema.json

What the schema cannot say (a limit's range, a policy's spelling) is still
'config check's to say.

Exit codes: 0 printed; 125 bad flags.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := cmd.OutOrStdout().Write(config.JSONSchema())
			return err
		},
	}
}

// limitInForce is one resource's limit in force and where it came from
// (view.LimitSource), for config show.
type limitInForce struct {
	Resource   string `json:"resource"`
	Configured int    `json:"configured"` // 0: not configured
	InForce    int    `json:"in_force"`
	Source     string `json:"source"`
	// NotConfigured is why a "stale" one is not configured.
	NotConfigured string     `json:"not_configured,omitempty"`
	By            string     `json:"by,omitempty"`
	SetAt         *time.Time `json:"set_at,omitempty"`
}

// limitsInForce reads the limit in force of every resource configured or
// with state, waiting no longer than a few seconds for the backend.
func (a *app) limitsInForce(ctx context.Context) ([]limitInForce, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	g, err := a.open(ctx, openOptions{})
	if err != nil {
		return nil, err
	}
	defer g.Close()
	sts, err := a.statuses(ctx, g, nil)
	if err != nil {
		return nil, err
	}
	l, err := a.load()
	if err != nil {
		return nil, err
	}
	limits := l.Config.Limits()
	out := []limitInForce{}
	for _, st := range sts {
		r := limitInForce{Resource: st.Key.Resource, Configured: limits[st.Key.Resource], InForce: st.Limit, Source: view.LimitSource(st)}
		if why := l.Catalog().Unconfigured(r.Resource); why != "" && r.Source == "asked" {
			r.Source, r.NotConfigured = "stale", why
		}
		if lv := st.LiveLimit; lv != nil {
			at := lv.At.UTC()
			r.By, r.SetAt = lv.By, &at
		}
		out = append(out, r)
	}
	return out, nil
}
