package textdist

import "testing"

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3}, {"llama38b", "lama38b", 1},
		{"abc", "abc", 0}, {"seqlen", "seq_len", 1}, {"flaw", "lawn", 2},
	} {
		if got := Levenshtein(tc.a, tc.b); got != tc.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Levenshtein(tc.b, tc.a); got != tc.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.want)
		}
	}
}

func FuzzLevenshtein(f *testing.F) {
	f.Add("kitten", "sitting")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 200 || len(b) > 200 {
			return
		}
		d := Levenshtein(a, b)
		// A metric bounded by the lengths: zero exactly for equal strings,
		// symmetric, at least the difference in length, at most the longer.
		if (d == 0) != (a == b) || d != Levenshtein(b, a) || d < abs(len(a)-len(b)) || d > max(len(a), len(b)) {
			t.Fatalf("Levenshtein(%q, %q) = %d", a, b, d)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
