package modelref_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpumem/gpumem/hub"
	"github.com/gpumem/gpumem/modelref"
)

// ExampleResolve resolves a catalog alias, a model folder and, offline,
// a release of a catalog model, which is read as that model with a note.
func ExampleResolve() {
	ctx := context.Background()
	cache, _ := os.MkdirTemp("", "hub-cache")
	defer os.RemoveAll(cache)
	offline, _ := hub.New(hub.Config{CacheDir: cache, Offline: true})
	opts := modelref.Options{Hub: offline, LocalPaths: true}

	src, err := modelref.Resolve(ctx, "llama3-8b", opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(src.Kind, src.Model.ID, src.Model.TotalParams())

	dir, _ := os.MkdirTemp("", "model")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "config.json"), src.Config, 0o644)
	local, err := modelref.Resolve(ctx, dir, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(local.Kind, local.Model.TotalParams())

	rel, err := modelref.Resolve(ctx, "meta-llama/Meta-Llama-3-8B-Instruct", opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rel.Kind, rel.Model.ID, len(rel.Notes))
	// Output:
	// catalog meta-llama/Meta-Llama-3-8B 8030261248
	// folder 8030261248
	// catalog meta-llama/Meta-Llama-3-8B 1
}

// ExampleLocate shows what a reference names, before anything is read.
// Without local paths allowed, names are never looked up on the disk.
func ExampleLocate() {
	for _, ref := range []string{"qwen3-8b", "Qwen/Qwen3-8B@main", "org/model", "./checkpoints/run1"} {
		loc, err := modelref.Locate(ref, modelref.Options{})
		if err != nil {
			fmt.Println(ref, "->", err)
			continue
		}
		fmt.Println(ref, "->", loc.Kind, loc.Hub)
	}
	// Output:
	// qwen3-8b -> catalog Qwen/Qwen3-8B
	// Qwen/Qwen3-8B@main -> hub Qwen/Qwen3-8B@main
	// org/model -> hub org/model
	// ./checkpoints/run1 -> ./checkpoints/run1: paths on this machine are not allowed
}
