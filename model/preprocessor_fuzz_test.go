package model

import (
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzParseFSPreprocessor fuzzes the preprocessor_config.json a model
// folder may hold next to a VLM's config.json: ParseFS returns a model or
// an error naming the file, never panics, and an image side it accepts
// gives a positive number of tokens per image.
func FuzzParseFSPreprocessor(f *testing.F) {
	config, err := catalogFS.ReadFile("catalog/llava-hf__llava-1.5-7b-hf.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"crop_size": 336, "size": 336}`,
		`{"crop_size": {"height": 448, "width": 448}, "size": {"shortest_edge": 448}}`,
		`{"size": {"longest_edge": 1e9}}`, `{"crop_size": -1}`, `{"size": "336"}`, `{"crop_size": 1}`,
		`[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, pre []byte) {
		fsys := fstest.MapFS{
			"m/" + ConfigFile:       {Data: config},
			"m/" + PreprocessorFile: {Data: pre},
		}
		m, err := ParseFS(fsys, "m")
		if err != nil {
			if m != nil {
				t.Fatalf("model and error both returned: %v", err)
			}
			// config.json is valid, so the error is about the other file.
			if !strings.Contains(err.Error(), PreprocessorFile) {
				t.Fatalf("error does not name %s: %v", PreprocessorFile, err)
			}
			return
		}
		v := m.Vision
		if v == nil {
			t.Fatal("the LLaVA config lost its vision tower")
		}
		if v.ImageSize <= 0 || v.TokensPerImage <= 0 {
			t.Fatalf("image side %d, %d tokens per image from %q", v.ImageSize, v.TokensPerImage, pre)
		}
	})
}
