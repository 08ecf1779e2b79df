package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/model"
)

// rewriteBoolArgs rewrites the spaced forms other estimators accept into
// what pflag parses, for the flags of the command args name:
//
//   - "--flag true" / "--flag false" for a boolean flag, or for a flag
//     with an optional value, become "--flag=true" (pflag would otherwise
//     read "true" as a positional argument);
//   - "--flag WORD" for a flag with an optional value becomes "--flag=WORD"
//     when WORD is one of the values the flag lists (--fused-loss liger);
//   - "--lora-target-modules q_proj k_proj v_proj" becomes
//     "--lora-target-modules=q_proj,k_proj,v_proj": the words after a
//     list flag that look like module names are joined (pflag's
//     StringSlice takes only the first). A word that names a catalog model,
//     a Hub id or a path ends the list, so a positional model can follow.
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
		a = longFormOf(fs, cmd, a)
		if !strings.HasPrefix(a, "--") || strings.Contains(a, "=") || i+1 >= len(args) {
			out = append(out, a)
			continue
		}
		f := lookupFlag(fs, cmd, a[2:])
		switch {
		case f == nil:
			out = append(out, a)
		case takesWord(f, args[i+1]):
			out = append(out, a+"="+strings.ToLower(args[i+1]))
			i++
		case f.Annotations[listAnnotation] != nil:
			n := listWords(args[i+1:])
			if n <= 1 {
				out = append(out, a)
				continue
			}
			out = append(out, a+"="+strings.Join(args[i+1:i+1+n], ","))
			i += n
		default:
			out = append(out, a)
		}
	}
	return out
}

// shortAnnotation gives a flag the multi-letter short names llama.cpp
// spells it with ("-ctk" for --cache-type-k, "-ngl" for --n-gpu-layers).
// pflag's shorthands are one letter, so it would read "-ctk q8_0" as
// "-c tk" followed by a stray "q8_0"; the rewrite turns such a name into
// the long flag first.
const shortAnnotation = "gpumem/short"

// longFormOf returns "--name" (with "=value" kept) when a is "-short" or
// "-short=value" for a multi-letter short name of one of cmd's flags, and
// a unchanged otherwise.
func longFormOf(fs *pflag.FlagSet, cmd *cobra.Command, a string) string {
	if len(a) < 3 || a[0] != '-' || a[1] == '-' {
		return a
	}
	name, value, hasValue := strings.Cut(a[1:], "=")
	var long string
	visit := func(f *pflag.Flag) {
		for _, s := range f.Annotations[shortAnnotation] {
			if s == name {
				long = f.Name
			}
		}
	}
	fs.VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	switch {
	case long == "":
		return a
	case hasValue:
		return "--" + long + "=" + value
	}
	return "--" + long
}

// listAnnotation marks list flags whose values may be spaced words.
const listAnnotation = "gpumem/list"

// takesWord reports whether word is the value of flag f given as a
// separate argument that pflag would not consume by itself.
func takesWord(f *pflag.Flag, word string) bool {
	if f.Value.Type() == "bool" {
		return isBoolWord(word)
	}
	if f.NoOptDefVal == "" {
		return false // pflag consumes the next argument itself
	}
	for _, v := range f.Annotations[valuesAnnotation] {
		if strings.EqualFold(v, word) {
			return true
		}
	}
	return false
}

// listWords counts the leading words that look like module names (not a
// flag, not a catalog model, not a Hub id or path).
func listWords(words []string) int {
	n := 0
	for _, w := range words {
		if w == "" || strings.HasPrefix(w, "-") || strings.ContainsAny(w, "/\\") || strings.HasSuffix(w, ".json") {
			break
		}
		if model.InCatalog(w) {
			break
		}
		n++
	}
	return n
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
