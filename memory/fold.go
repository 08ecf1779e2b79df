package memory

import "strings"

// fold returns s lower-cased without surrounding blanks, as
// strings.ToLower(strings.TrimSpace(s)) does, but returns s itself at
// the cost of one scan when it is already in that form: the job's
// option names are read on every estimate, and almost always arrive
// canonical. Most are empty (the default): that test is inlined where
// fold is called.
func fold(s string) string {
	if s == "" {
		return s
	}
	return foldSet(s)
}

// foldSet is fold of a non-empty s.
func foldSet(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' || c <= ' ' || c >= 0x80 {
			return strings.ToLower(strings.TrimSpace(s))
		}
	}
	return s
}
