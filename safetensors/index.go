package safetensors

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gpumem/gpumem/internal/jsonkeys"
)

// IndexName is the file that maps tensor names to shards in a sharded
// checkpoint, as written by transformers' save_pretrained.
const IndexName = "model.safetensors.index.json"

// SingleName is the file name of an unsharded checkpoint.
const SingleName = "model.safetensors"

// Index is a parsed model.safetensors.index.json.
type Index struct {
	// TotalSize is metadata.total_size: the bytes of tensor data over all
	// shards as computed by the writer; 0 if absent.
	TotalSize int64 `json:"total_size,omitempty"`
	// WeightMap maps each tensor name to the shard file holding it.
	WeightMap map[string]string `json:"weight_map"`
}

// ParseIndex parses a model.safetensors.index.json. Shard names must be
// plain file names: they are later opened relative to the checkpoint's
// folder, so a name such as "../x" or "/etc/passwd" is rejected.
func ParseIndex(data []byte) (*Index, error) {
	var raw struct {
		Metadata struct {
			TotalSize json.Number `json:"total_size"`
		} `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", IndexName, err)
	}
	if err := jsonkeys.Check(data); err != nil {
		return nil, fmt.Errorf("%s: %w", IndexName, err)
	}
	if len(raw.WeightMap) == 0 {
		return nil, fmt.Errorf("%s: missing or empty weight_map", IndexName)
	}
	idx := &Index{WeightMap: raw.WeightMap}
	if raw.Metadata.TotalSize != "" {
		// Some writers store total_size as a float ("1.5e10" or "123.0").
		f, err := raw.Metadata.TotalSize.Float64()
		if err != nil || f < 0 || f > 9e18 {
			return nil, fmt.Errorf("%s: metadata.total_size %q: want a non-negative byte count", IndexName, raw.Metadata.TotalSize)
		}
		idx.TotalSize = int64(f)
	}
	shards := map[string]bool{}
	for tensor, shard := range idx.WeightMap {
		if err := CheckFileName(shard); err != nil {
			return nil, fmt.Errorf("%s: weight_map[%q]: %w", IndexName, tensor, err)
		}
		if shards[shard] = true; len(shards) > MaxShards {
			return nil, fmt.Errorf("%s: weight_map names more than %d shard files", IndexName, MaxShards)
		}
	}
	return idx, nil
}

// MaxShards bounds the shard files an index may name: each is one header
// read (a Range request on the Hub). The largest published checkpoints
// have a few hundred shards (DeepSeek-V3: 163).
const MaxShards = 10000

// Shards returns the distinct shard file names, sorted.
func (idx *Index) Shards() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range idx.WeightMap {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// CheckFileName reports whether name is a plain file name safe to open
// inside a checkpoint folder: not empty, no path separators, not "." or
// "..", and no control characters.
func CheckFileName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("file name %q: want a plain file name", name)
	case strings.ContainsAny(name, `/\:`):
		return fmt.Errorf("file name %q: must not contain a path separator or ':'", name)
	case strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return fmt.Errorf("file name %q: contains a control character", name)
	}
	return nil
}
