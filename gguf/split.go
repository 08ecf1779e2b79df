package gguf

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
)

// splitName matches the shard names llama.cpp's gguf-split writes:
// "<prefix>-00001-of-00003.gguf" (llama_split_path in src/llama.cpp).
// It is compiled on first use, not when the program starts.
var splitName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)
})

// maxShards bounds the shard count read from a file name.
const maxShards = 9999

// SplitNames returns the names of all shards of a split model given the
// name of any one of them, in order, or nil when name is not a shard name.
func SplitNames(name string) []string {
	m := splitName().FindStringSubmatch(name)
	if m == nil {
		return nil
	}
	n, _ := strconv.Atoi(m[3])
	no, _ := strconv.Atoi(m[2])
	if n < 1 || n > maxShards || no < 1 || no > n {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d-of-%05d.gguf", m[1], i+1, n)
	}
	return out
}

// Merge combines the shards of a split model, given in order: metadata
// comes from the first shard (gguf-split writes the model's keys there
// and split.no / split.count in every shard), tensors from all of them.
// The merged Size is the total of the shards.
func Merge(shards []*File) (*File, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("merge: no shards")
	}
	if len(shards) == 1 {
		return shards[0], nil
	}
	out := *shards[0]
	out.Tensors, out.Size = nil, 0
	for i, s := range shards {
		if count, ok := s.Uint("split.count"); !ok || count != uint64(len(shards)) {
			return nil, fmt.Errorf("merge: shard %d: split.count %v, want %d", i+1, s.Metadata["split.count"], len(shards))
		}
		if no, ok := s.Uint("split.no"); !ok || no != uint64(i) {
			return nil, fmt.Errorf("merge: shard %d: split.no %v, want %d", i+1, s.Metadata["split.no"], i)
		}
		out.Tensors = append(out.Tensors, s.Tensors...)
		out.Size += s.Size
	}
	return &out, nil
}
