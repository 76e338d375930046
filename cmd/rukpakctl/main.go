// Command rukpakctl is rukpak's command-line tool. Its subcommands live one
// group per file; each file registers its group with register in an init
// function, so adding a command touches no other file.
package main

import (
	"context"
	"errors"
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
		code, msg := exitStatus(err)
		if msg != nil {
			fmt.Fprintln(os.Stderr, "rukpakctl:", msg)
		}
		os.Exit(code)
	}
}

// exitError ends rukpakctl with status code; err, when set, is printed
// first.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitStatus returns the status rukpakctl ends with for err (non-nil), and
// the error to print (nil for none).
func exitStatus(err error) (int, error) {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, ee.err
	}
	return 1, err
}
