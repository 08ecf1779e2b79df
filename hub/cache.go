package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/gpumem/gpumem/internal/fsutil"
)

// Cache is a Hub cache folder in huggingface_hub's layout, shared with
// transformers and the Hugging Face CLI:
//
//	<dir>/models--<org>--<name>/refs/<revision>            the commit hash of a branch or tag
//	<dir>/models--<org>--<name>/snapshots/<commit>/<file>  the file (a symlink into blobs/)
//	<dir>/models--<org>--<name>/blobs/<etag>               the file's content
//	<dir>/models--<org>--<name>/.no_exist/<commit>/<file>  marks a file known to be absent
//
// (huggingface_hub: file_download.py, hf_hub_download and
// _cache_commit_hash_for_specific_revision). Every path is built from a
// validated id, revision, commit hash and file name, and checked to stay
// inside the folder.
type Cache struct {
	// Dir is the cache folder ($HF_HUB_CACHE, default $HF_HOME/hub).
	Dir string
}

// RepoDir returns the folder of a model: models--org--name. "--" is
// not allowed in ids, so the mapping is one to one.
func (c Cache) RepoDir(repo string) (string, error) {
	if err := ValidateRepo(repo); err != nil {
		return "", err
	}
	return c.inside("models--" + strings.ReplaceAll(repo, "/", "--"))
}

// inside joins parts under Dir and checks the result stays inside it.
func (c Cache) inside(parts ...string) (string, error) {
	if c.Dir == "" {
		return "", errors.New("no cache folder configured")
	}
	root := filepath.Clean(c.Dir)
	p := filepath.Join(append([]string{root}, parts...)...)
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: cache path %q leaves the cache folder", ErrInvalidRef, p)
	}
	return p, nil
}

// Commit returns the commit a revision points to in the cache: the
// revision itself when it is a commit hash, else the content of refs/<revision>.
func (c Cache) Commit(repo, rev string) (string, error) {
	if IsCommit(rev) {
		return rev, nil
	}
	if err := ValidateRevision(rev); err != nil {
		return "", err
	}
	dir, err := c.RepoDir(repo)
	if err != nil {
		return "", err
	}
	data, err := fsutil.ReadFile(filepath.Join(dir, "refs", filepath.FromSlash(rev)), maxRefFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("cache ref %s@%s: %w", repo, rev, err)
	}
	commit := strings.TrimSpace(string(data))
	if !IsCommit(commit) {
		return "", fmt.Errorf("cache ref %s@%s: %q is not a commit hash", repo, rev, commit)
	}
	return commit, nil
}

// maxRefFile bounds a cache ref file, which holds one commit hash (40
// hexadecimal digits and perhaps a newline).
const maxRefFile = 1 << 10

// paths returns the snapshot and .no_exist paths of a file at a commit.
func (c Cache) paths(repo, commit, file string) (snap, missing string, err error) {
	if !IsCommit(commit) {
		return "", "", fmt.Errorf("%w: %q is not a commit hash", ErrInvalidRef, commit)
	}
	if err := ValidateFile(file); err != nil {
		return "", "", err
	}
	dir, err := c.RepoDir(repo)
	if err != nil {
		return "", "", err
	}
	name := filepath.FromSlash(file)
	rel, _ := filepath.Rel(c.Dir, dir)
	if snap, err = c.inside(rel, "snapshots", commit, name); err != nil {
		return "", "", err
	}
	missing, err = c.inside(rel, ".no_exist", commit, name)
	return snap, missing, err
}

// Lookup finds a file of repo at rev in the cache. It returns the file's
// path and commit; an error wrapping [ErrNotFound] and fs.ErrNotExist
// when the cache records the file as absent; or an error wrapping only
// fs.ErrNotExist when the cache does not know.
func (c Cache) Lookup(repo, rev, file string) (path, commit string, err error) {
	commit, err = c.Commit(repo, rev)
	if err != nil {
		return "", "", err
	}
	snap, missing, err := c.paths(repo, commit, file)
	if err != nil {
		return "", "", err
	}
	if st, err := os.Stat(snap); err == nil && st.Mode().IsRegular() {
		return snap, commit, nil
	}
	if _, err := os.Stat(missing); err == nil {
		return "", commit, &StatusError{Op: "cache", Repo: repo, File: file, Status: 404, Kind: ErrNotFound, entry: true}
	}
	return "", commit, fmt.Errorf("cache %s@%s: %s: %w", repo, rev, file, fs.ErrNotExist)
}

// etagRe matches the etags the Hub uses as blob names: a git blob sha1
// or an LFS sha256. It is compiled on first use, not when the program
// starts.
var etagRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
})

// Store writes a fetched file: blobs/<etag> with a relative symlink from
// snapshots/<commit>/<file> (a plain copy where symlinks fail, as
// huggingface_hub does on Windows), and refs/<rev> = commit when rev is a
// branch or tag. It returns the snapshot path.
func (c Cache) Store(repo, rev, commit, file, etag string, data []byte) (string, error) {
	snap, _, err := c.paths(repo, commit, file)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(snap), 0o755); err != nil {
		return "", err
	}
	if err := c.writeRef(repo, rev, commit); err != nil {
		return "", err
	}
	if etagRe().MatchString(etag) {
		if err := c.storeBlob(repo, etag, snap, data); err == nil {
			return snap, nil
		}
	}
	return snap, writeAtomic(snap, data)
}

// storeBlob writes the blob and links the snapshot path to it.
func (c Cache) storeBlob(repo, etag, snap string, data []byte) error {
	dir, err := c.RepoDir(repo)
	if err != nil {
		return err
	}
	blob := filepath.Join(dir, "blobs", etag)
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return err
	}
	if err := writeAtomic(blob, data); err != nil {
		return err
	}
	target, err := filepath.Rel(filepath.Dir(snap), blob)
	if err != nil {
		return err
	}
	tmp := snap + ".tmp-link"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, snap)
}

// StoreMissing records that file does not exist at commit, so an
// offline run knows not to look for it.
func (c Cache) StoreMissing(repo, rev, commit, file string) error {
	_, missing, err := c.paths(repo, commit, file)
	if err != nil {
		return err
	}
	if err := c.writeRef(repo, rev, commit); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(missing), 0o755); err != nil {
		return err
	}
	return writeAtomic(missing, nil)
}

// writeRef records refs/<rev> = commit for a branch or tag.
func (c Cache) writeRef(repo, rev, commit string) error {
	if rev == "" || IsCommit(rev) {
		return nil
	}
	if err := ValidateRevision(rev); err != nil {
		return err
	}
	dir, err := c.RepoDir(repo)
	if err != nil {
		return err
	}
	ref := filepath.Join(dir, "refs", filepath.FromSlash(rev))
	if err := os.MkdirAll(filepath.Dir(ref), 0o755); err != nil {
		return err
	}
	return writeAtomic(ref, []byte(commit))
}

// writeAtomic writes data to a temporary file and renames it into place,
// so a concurrent reader sees the old file or the new one, never a part.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
