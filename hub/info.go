package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
)

// maxInfo bounds the repository-info answer; a repository listing tens
// of thousands of files is a few MiB.
const maxInfo = 32 << 20

// RepoInfo is what the Hub says about one revision of a repository.
type RepoInfo struct {
	// Commit is the commit hash the revision resolves to.
	Commit string `json:"sha"`
	// Files are the repository's file paths at that commit, sorted.
	Files []string `json:"files"`
}

// Info resolves ref to a commit and lists its files with
// GET {endpoint}/api/models/{repo}/revision/{revision} (huggingface_hub:
// hf_api.py, model_info). Offline, it lists the cached snapshot instead
// (only the files fetched so far).
func (c *Client) Info(ctx context.Context, ref Ref) (*RepoInfo, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if c.cfg.Offline {
		return c.cachedInfo(ref)
	}
	u := fmt.Sprintf("%s/api/models/%s/revision/%s", c.cfg.Endpoint, ref.Repo, url.PathEscape(ref.rev()))
	resp, err := c.send(ctx, request{op: "model info", repo: ref.Repo, method: http.MethodGet, url: u, follow: true, maxBody: maxInfo})
	if err != nil {
		return nil, err
	}
	var raw struct {
		SHA      string `json:"sha"`
		Siblings []struct {
			Name string `json:"rfilename"`
		} `json:"siblings"`
	}
	if err := json.Unmarshal(resp.body, &raw); err != nil {
		return nil, fmt.Errorf("model info %s: %w", ref.Repo, err)
	}
	if !IsCommit(raw.SHA) {
		return nil, fmt.Errorf("model info %s: %q is not a commit hash", ref.Repo, raw.SHA)
	}
	info := &RepoInfo{Commit: raw.SHA}
	for _, s := range raw.Siblings {
		if ValidateFile(s.Name) == nil {
			info.Files = append(info.Files, s.Name)
		}
	}
	sort.Strings(info.Files)
	return info, nil
}

// cachedInfo lists the files of the cached snapshot of ref.
func (c *Client) cachedInfo(ref Ref) (*RepoInfo, error) {
	cache := Cache{Dir: c.cfg.CacheDir}
	if c.cfg.CacheDir == "" {
		return nil, fmt.Errorf("model info %s: %w", ref, ErrOffline)
	}
	commit, err := cache.Commit(ref.Repo, ref.rev())
	if err != nil {
		return nil, fmt.Errorf("model info %s: %w (%w)", ref, ErrOffline, err)
	}
	dir, err := cache.RepoDir(ref.Repo)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "snapshots", commit)
	info := &RepoInfo{Commit: commit}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			info.Files = append(info.Files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("model info %s: %w (%w)", ref, ErrOffline, err)
	}
	sort.Strings(info.Files)
	return info, nil
}
