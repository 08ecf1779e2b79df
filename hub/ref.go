package hub

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// DefaultRevision is the branch used when a reference names none.
const DefaultRevision = "main"

// maxRepoName is the longest name part of a model id the Hub allows
// (huggingface_hub: utils/_validators.py, validate_repo_id).
const maxRepoName = 96

// Ref names one revision of a model repository on the Hub.
type Ref struct {
	// Repo is the model id, "org/name" (or a legacy single-segment id such as "gpt2").
	Repo string `json:"repo"`
	// Revision is a branch, tag, "refs/pr/N" or a commit hash; "" means main.
	Revision string `json:"revision,omitempty"`
}

// String returns "org/name" or "org/name@revision".
func (r Ref) String() string {
	if r.Revision == "" {
		return r.Repo
	}
	return r.Repo + "@" + r.Revision
}

// rev returns the revision, defaulting to main.
func (r Ref) rev() string {
	if r.Revision == "" {
		return DefaultRevision
	}
	return r.Revision
}

// ParseRef parses "org/name" or "org/name@revision" and validates both parts.
func ParseRef(s string) (Ref, error) {
	repo, rev, _ := strings.Cut(s, "@")
	r := Ref{Repo: repo, Revision: rev}
	if err := r.Validate(); err != nil {
		return Ref{}, err
	}
	return r, nil
}

// Validate checks the model id and revision. Both become parts of URLs
// and of cache paths, so anything that could step outside the cache
// folder ("..", absolute paths, backslashes, control characters) is refused.
func (r Ref) Validate() error {
	if err := ValidateRepo(r.Repo); err != nil {
		return err
	}
	if r.Revision == "" {
		return nil
	}
	return ValidateRevision(r.Revision)
}

// repoPart matches one part of a model id; it is compiled on first use,
// not when the program starts.
var repoPart = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
})

// ValidateRepo checks a model id with the Hub's rules: one or two parts
// separated by "/", each of letters, digits, '-', '_' and '.', not
// starting or ending with '-' or '.', without "--" or "..", the name at
// most 96 characters (huggingface_hub: utils/_validators.py).
func ValidateRepo(id string) error {
	bad := func(why string) error { return fmt.Errorf("%w: model id %q: %s", ErrInvalidRef, id, why) }
	if id == "" {
		return bad("empty")
	}
	parts := strings.Split(id, "/")
	if len(parts) > 2 {
		return bad(`want "org/name"`)
	}
	if strings.Contains(id, "--") || strings.Contains(id, "..") {
		return bad(`"--" and ".." are not allowed`)
	}
	for _, p := range parts {
		if !repoPart().MatchString(p) {
			return bad("want letters, digits, '-', '_' or '.' in each part, not starting or ending with '-' or '.'")
		}
	}
	if len(parts[len(parts)-1]) > maxRepoName {
		return bad(fmt.Sprintf("name longer than %d characters", maxRepoName))
	}
	return nil
}

// commitRe matches a full git commit hash; it is compiled on first use.
var commitRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })

// IsCommit reports whether rev is a full 40-character commit hash.
func IsCommit(rev string) bool { return commitRe().MatchString(rev) }

// ValidateRevision checks a branch, tag, "refs/pr/N" or commit hash with
// git's ref-name rules (git check-ref-format): no "..", no leading,
// trailing or doubled "/", no component starting with '.', no control
// characters, spaces or any of ~^:?*[\ and at most 255 bytes.
func ValidateRevision(rev string) error {
	bad := func(why string) error { return fmt.Errorf("%w: revision %q: %s", ErrInvalidRef, rev, why) }
	switch {
	case rev == "":
		return bad("empty")
	case len(rev) > 255:
		return bad("longer than 255 bytes")
	case strings.Contains(rev, ".."):
		return bad(`".." is not allowed`)
	case strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/") || strings.Contains(rev, "//"):
		return bad(`a leading, trailing or doubled "/" is not allowed`)
	case strings.ContainsAny(rev, "~^:?*[\\ @{"):
		return bad(`characters ~^:?*[\ @{ and spaces are not allowed`)
	case strings.HasSuffix(rev, ".lock"):
		return bad(`must not end in ".lock"`)
	case strings.IndexFunc(rev, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return bad("contains a control character")
	}
	for _, c := range strings.Split(rev, "/") {
		if strings.HasPrefix(c, ".") {
			return bad(`a path component must not start with "."`)
		}
	}
	return nil
}

// ValidateFile checks a file path inside a repository ("config.json",
// "onnx/model.onnx"): relative, "/"-separated, without "." or ".."
// components, backslashes, colons or control characters.
func ValidateFile(name string) error {
	bad := func(why string) error { return fmt.Errorf("%w: file name %q: %s", ErrInvalidRef, name, why) }
	switch {
	case name == "":
		return bad("empty")
	case len(name) > 1024:
		return bad("longer than 1024 bytes")
	case strings.HasPrefix(name, "/"):
		return bad("must be relative")
	case strings.ContainsAny(name, `\:`):
		return bad(`backslashes and ':' are not allowed`)
	case strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return bad("contains a control character")
	}
	for _, c := range strings.Split(name, "/") {
		if c == "" || c == "." || c == ".." {
			return bad(`empty, "." and ".." components are not allowed`)
		}
	}
	return nil
}
