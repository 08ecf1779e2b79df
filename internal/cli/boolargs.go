package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// rewriteBoolArgs turns "--flag true" and "--flag false" into "--flag=true"
// and "--flag=false" for boolean flags of the command args name. Other
// estimators accept the spaced form (e.g. --flashattn true); pflag would
// otherwise read "true" as a positional argument.
func rewriteBoolArgs(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	fs := cmd.Flags()
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && i+1 < len(args) && isBoolWord(args[i+1]) {
			if f := lookupFlag(fs, cmd, a[2:]); f != nil && f.Value.Type() == "bool" {
				out = append(out, a+"="+strings.ToLower(args[i+1]))
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

func lookupFlag(fs *pflag.FlagSet, cmd *cobra.Command, name string) *pflag.Flag {
	if n := fs.GetNormalizeFunc(); n != nil {
		name = string(n(fs, name))
	}
	if f := fs.Lookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().Lookup(name)
}

func isBoolWord(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false":
		return true
	}
	return false
}
