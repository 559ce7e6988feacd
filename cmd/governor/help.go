package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/governor-dev/governor/internal/exitcode"
)

// helpTemplate lays out every command's --help so that its first screen
// says what a newcomer needs: one line, Usage and Examples (cobra's usage
// template puts them first), then the flags, then the long explanation.
const helpTemplate = `{{.Short | trimTrailingWhitespaces}}

{{if or .Runnable .HasSubCommands}}{{.UsageString}}{{end}}{{with .Long}}
{{. | trimTrailingWhitespaces}}
{{end}}`

// helpScreen is the screen the first part of a --help must fit: its
// first line, Usage and Examples (TestHelpFirstScreen).
const helpScreen = 24

// versionCmd is `governor version`: what --version prints.
func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version, the commit it was built from and the Go release",
		Long:    "Exit codes: 0 printed; 125 bad flags.",
		Example: "  governor version\n  governor --version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "governor %s\n", version())
			if err != nil {
				return exitWith(exitcode.Failure, err)
			}
			return nil
		},
	}
}

// cobraExamples are the examples of cobra's own commands.
var cobraExamples = map[string]string{
	"help":       "  governor help run\n  governor help config show",
	"completion": "  source <(governor completion bash)\n  governor completion zsh > \"${fpath[1]}/_governor\"",
	"bash":       "  source <(governor completion bash)\n  governor completion bash > ~/.local/share/bash-completion/completions/governor",
	"zsh":        "  source <(governor completion zsh)\n  governor completion zsh > \"${fpath[1]}/_governor\"",
	"fish":       "  governor completion fish | source\n  governor completion fish > ~/.config/fish/completions/governor.fish",
	"powershell": "  governor completion powershell | Out-String | Invoke-Expression",
}

// cobraHelp gives cobra's help and completion commands their examples
// and exit codes, as every other command has.
func cobraHelp(c *cobra.Command) {
	if c.Example == "" {
		c.Example = cobraExamples[c.Name()]
	}
	long := c.Long
	if long == "" {
		long = c.Short
	}
	c.Long = long + "\n\nExit codes: 0 printed; 125 bad flags or an unknown command."
	for _, sub := range c.Commands() {
		cobraHelp(sub)
	}
}
