package model

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	raw, err := catalogFS.ReadFile("catalog/meta-llama__Llama-2-7b-hf.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "llama.json")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "Llama-2-7b")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, ConfigFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	const want = 6738415616
	tests := []struct{ ref, id string }{
		{"meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-hf"},
		{"META-LLAMA/llama-2-7B-HF", "meta-llama/Llama-2-7b-hf"},
		{"llama2-7b", "meta-llama/Llama-2-7b-hf"},
		{" Llama2-7B ", "meta-llama/Llama-2-7b-hf"},
		{file, file},
		{folder, folder},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			m, err := Load(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			if m.ID != tt.id || m.TotalParams() != want {
				t.Errorf("ID %q, params %d; want %q, %d", m.ID, m.TotalParams(), tt.id, want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "config.json")
	if err := os.WriteFile(bad, []byte(`{"model_type": "llama", "num_attention_heads": -3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, ref string
		notFound  bool
		want      string
	}{
		{"hub id not in catalog", "someone/some-model", true, `"someone/some-model" is not in the built-in catalog`},
		{"unknown alias", "llama9-1t", true, "not in the built-in catalog"},
		{"empty", "", true, "empty name"},
		{"missing file", filepath.Join(dir, "nope", "config.json"), false, "no such file"},
		{"missing relative path", "./no/such/dir", false, "no such file"},
		{"bad config file", bad, false, bad + ": num_attention_heads: want a positive integer, got -3"},
		{"bad config folder", dir, false, "num_attention_heads: want a positive integer, got -3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.ref)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if errors.Is(err, ErrNotFound) != tt.notFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v (%v)", !tt.notFound, tt.notFound, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestParseFS(t *testing.T) {
	llava, err := catalogFS.ReadFile("catalog/llava-hf__llava-1.5-7b-hf.json")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{
		"llava/config.json":                {Data: llava},
		"llava/preprocessor_config.json":   {Data: []byte(`{"crop_size": {"height": 336, "width": 336}, "size": {"shortest_edge": 448}}`)},
		"plain/config.json":                {Data: llava},
		"resized/config.json":              {Data: llava},
		"resized/preprocessor_config.json": {Data: []byte(`{"size": {"shortest_edge": 448}}`)},
		"badpre/config.json":               {Data: llava},
		"badpre/preprocessor_config.json":  {Data: []byte(`{"size": {"shortest_edge": "big"}}`)},
	}
	m, err := ParseFS(fsys, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "plain" || m.Vision.ImageSize != 336 || m.Vision.TokensPerImage != 576 {
		t.Errorf("plain: ID %q, image %d, tokens %d; want plain, 336, 576", m.ID, m.Vision.ImageSize, m.Vision.TokensPerImage)
	}
	m, err = ParseFS(fsys, "llava")
	if err != nil {
		t.Fatal(err)
	}
	if m.Vision.ImageSize != 336 || m.Vision.TokensPerImage != 576 {
		t.Errorf("crop_size wins: image %d, tokens %d; want 336, 576", m.Vision.ImageSize, m.Vision.TokensPerImage)
	}
	m, err = ParseFS(fsys, "resized")
	if err != nil {
		t.Fatal(err)
	}
	if m.Vision.ImageSize != 448 || m.Vision.TokensPerImage != 32*32 {
		t.Errorf("size only: image %d, tokens %d; want 448, 1024", m.Vision.ImageSize, m.Vision.TokensPerImage)
	}
	_, err = ParseFS(fsys, "badpre")
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.File != "badpre/preprocessor_config.json" || ce.Key != "size.shortest_edge" {
		t.Errorf("bad preprocessor: err = %v, want a ConfigError on badpre/preprocessor_config.json size.shortest_edge", err)
	}
	if _, err := ParseFS(fsys, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing folder: err = %v, want fs.ErrNotExist", err)
	}
}
