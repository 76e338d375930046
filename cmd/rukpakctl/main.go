// Command rukpakctl is rukpak's command-line tool. Its subcommands live one
// group per file; each file registers its group with register in an init
// function, so adding a command touches no other file.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// commands are the constructors of the top-level subcommands.
var commands []func() *cobra.Command

// register adds a top-level subcommand; call it from an init function.
func register(newCmd func() *cobra.Command) { commands = append(commands, newCmd) }

// newRootCmd builds a fresh command tree.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "rukpakctl",
		Short:         "Work with rukpak and its local development cluster",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, newCmd := range commands {
		root.AddCommand(newCmd())
	}
	return root
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rukpakctl:", err)
		os.Exit(1)
	}
}
