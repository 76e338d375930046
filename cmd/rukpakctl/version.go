package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rukpak/rukpak/internal/version"
)

func init() { register(newVersionCmd) }

// newVersionCmd prints the release, commit and Go version of rukpakctl.
func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print rukpakctl's release, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			switch output {
			case "":
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "rukpakctl", info)
				return err
			case "json":
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			default:
				return fmt.Errorf("--output %q: want json or nothing", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json prints the fields as a JSON object")
	return cmd
}
