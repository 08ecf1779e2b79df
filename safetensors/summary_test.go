package safetensors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tensors turns specs into header tensors (offsets are irrelevant here).
func tensors(t *testing.T, specs ...spec) []Tensor {
	t.Helper()
	data := build(t, nil, specs...)
	h, err := ReadHeader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return h.Tensors
}

func TestClassify(t *testing.T) {
	all := tensors(t,
		spec{"model.embed_tokens.weight", "BF16", []int64{8, 4}},
		spec{"lm_head.weight", "BF16", []int64{8, 4}},
		spec{"shared.weight", "BF16", []int64{8, 4}},
		spec{"encoder.embed_tokens.weight", "BF16", []int64{8, 4}},
		spec{"model.layers.0.self_attn.rotary_emb.inv_freq", "F32", []int64{2}},
		spec{"transformer.h.0.attn.bias", "BOOL", []int64{1, 1, 4, 4}},
		spec{"transformer.h.0.attn.c_attn.bias", "F32", []int64{12}},
		spec{"transformer.h.0.attn.masked_bias", "F32", []int64{}},
		spec{"model.layers.0.mlp.down_proj.qweight", "I32", []int64{1, 4}},
		spec{"model.layers.0.mlp.down_proj.scales", "F16", []int64{1, 4}},
		spec{"model.layers.0.mlp.down_proj.qzeros", "I32", []int64{1, 1}},
		spec{"model.layers.0.mlp.down_proj.g_idx", "I32", []int64{8}},
		spec{"model.layers.1.mlp.up_proj.weight", "F8_E4M3", []int64{4, 4}},
		spec{"model.layers.1.mlp.up_proj.weight_scale_inv", "F32", []int64{1, 1}},
		spec{"model.layers.2.mlp.up_proj.weight", "U8", []int64{8, 1}},
		spec{"model.layers.2.mlp.up_proj.weight.absmax", "F32", []int64{1}},
		spec{"model.layers.2.mlp.up_proj.weight.quant_state.bitsandbytes__nf4", "U8", []int64{8}},
		spec{"model.layers.0.mlp.experts.gate_up_proj_blocks", "U8", []int64{2, 4, 16}},
		spec{"model.layers.0.mlp.experts.gate_up_proj_scales", "U8", []int64{2, 4}},
		spec{"bert.embeddings.position_ids", "I64", []int64{1, 4}},
	)
	byName := map[string]Tensor{}
	for _, tn := range all {
		byName[tn.Name] = tn
	}
	want := map[string]Kind{
		"model.embed_tokens.weight":                                       Parameter,
		"lm_head.weight":                                                  TiedCopy,
		"shared.weight":                                                   Parameter,
		"encoder.embed_tokens.weight":                                     TiedCopy,
		"model.layers.0.self_attn.rotary_emb.inv_freq":                    Buffer,
		"transformer.h.0.attn.bias":                                       Buffer,
		"transformer.h.0.attn.c_attn.bias":                                Parameter,
		"transformer.h.0.attn.masked_bias":                                Buffer,
		"model.layers.0.mlp.down_proj.qweight":                            Packed,
		"model.layers.0.mlp.down_proj.scales":                             QuantAux,
		"model.layers.0.mlp.down_proj.qzeros":                             QuantAux,
		"model.layers.0.mlp.down_proj.g_idx":                              QuantAux,
		"model.layers.1.mlp.up_proj.weight":                               Parameter,
		"model.layers.1.mlp.up_proj.weight_scale_inv":                     QuantAux,
		"model.layers.2.mlp.up_proj.weight":                               Packed,
		"model.layers.2.mlp.up_proj.weight.absmax":                        QuantAux,
		"model.layers.0.mlp.experts.gate_up_proj_blocks":                  Packed,
		"model.layers.0.mlp.experts.gate_up_proj_scales":                  QuantAux,
		"bert.embeddings.position_ids":                                    Buffer,
		"model.layers.2.mlp.up_proj.weight.quant_state.bitsandbytes__nf4": QuantAux,
	}
	for _, tn := range all {
		if got := Classify(tn, byName, true); got != want[tn.Name] {
			t.Errorf("Classify(%s) = %s, want %s", tn.Name, got, want[tn.Name])
		}
	}
	// Without tie_word_embeddings an lm_head is a parameter of its own.
	if got := Classify(byName["lm_head.weight"], byName, false); got != Parameter {
		t.Errorf("untied lm_head: got %s, want parameter", got)
	}
}

// gpt2Tiny is a two-layer GPT-2 layout (n_embd 4, vocab 10, positions 6)
// with the causal-mask buffers and a stored tied lm_head, as old
// checkpoints have.
func gpt2Tiny(t *testing.T) []Tensor {
	var specs []spec
	specs = append(specs,
		spec{"transformer.wte.weight", "F32", []int64{10, 4}},
		spec{"transformer.wpe.weight", "F32", []int64{6, 4}},
		spec{"transformer.ln_f.weight", "F32", []int64{4}},
		spec{"transformer.ln_f.bias", "F32", []int64{4}},
		spec{"lm_head.weight", "F32", []int64{10, 4}},
	)
	for _, l := range []string{"0", "1"} {
		p := "transformer.h." + l + "."
		specs = append(specs,
			spec{p + "ln_1.weight", "F32", []int64{4}}, spec{p + "ln_1.bias", "F32", []int64{4}},
			spec{p + "attn.c_attn.weight", "F32", []int64{4, 12}}, spec{p + "attn.c_attn.bias", "F32", []int64{12}},
			spec{p + "attn.c_proj.weight", "F32", []int64{4, 4}}, spec{p + "attn.c_proj.bias", "F32", []int64{4}},
			spec{p + "attn.bias", "F32", []int64{1, 1, 6, 6}}, spec{p + "attn.masked_bias", "F32", []int64{}},
			spec{p + "ln_2.weight", "F32", []int64{4}}, spec{p + "ln_2.bias", "F32", []int64{4}},
			spec{p + "mlp.c_fc.weight", "F32", []int64{4, 16}}, spec{p + "mlp.c_fc.bias", "F32", []int64{16}},
			spec{p + "mlp.c_proj.weight", "F32", []int64{16, 4}}, spec{p + "mlp.c_proj.bias", "F32", []int64{4}},
		)
	}
	return tensors(t, specs...)
}

func TestSummarizeCompare(t *testing.T) {
	// GPT-2 parameters: wte 40 + wpe 24 + ln_f 8 + 2 layers ×
	// (ln 8 + c_attn 60 + c_proj 20 + ln 8 + c_fc 80 + c_proj 68 = 244).
	const configParams = 40 + 24 + 8 + 2*244
	s := Summarize(gpt2Tiny(t), true)
	if s.Params != configParams {
		t.Errorf("Params = %d, want %d", s.Params, configParams)
	}
	wantKinds := []Group{
		{Key: "parameter", Tensors: 28, Elements: configParams, Bytes: 4 * configParams},
		{Key: "buffer", Tensors: 4, Elements: 2 * 37, Bytes: 4 * 2 * 37},
		{Key: "tied_copy", Tensors: 1, Elements: 40, Bytes: 160},
	}
	if diff := cmp.Diff(wantKinds, s.ByKind); diff != "" {
		t.Errorf("ByKind (-want +got):\n%s", diff)
	}
	if s.Elements != configParams+74+40 || s.Tensors != 33 {
		t.Errorf("totals: %d tensors, %d elements", s.Tensors, s.Elements)
	}
	c := s.Compare(configParams)
	if !c.Comparable || c.Unexplained != 0 || len(c.Extras) != 2 {
		t.Errorf("Compare = %+v, want comparable, nothing unexplained, two extras", c)
	}
	c = s.Compare(configParams - 5)
	if c.Unexplained != 5 || !strings.Contains(strings.Join(c.Notes, "\n"), "5 parameter elements differ") {
		t.Errorf("Compare with a wrong count = %+v", c)
	}
}

func TestSummarizeByDType(t *testing.T) {
	s := Summarize(tensors(t,
		spec{"a.qweight", "I32", []int64{16, 4}},
		spec{"a.scales", "F16", []int64{2, 4}},
		spec{"b.weight", "BF16", []int64{8, 8}},
		spec{"c.weight", "F8_E4M3", []int64{8, 8}},
	), false)
	want := []Group{
		{Key: "I32", Tensors: 1, Elements: 64, Bytes: 256},
		{Key: "BF16", Tensors: 1, Elements: 64, Bytes: 128},
		{Key: "F8_E4M3", Tensors: 1, Elements: 64, Bytes: 64},
		{Key: "F16", Tensors: 1, Elements: 8, Bytes: 16},
	}
	if diff := cmp.Diff(want, s.ByDType); diff != "" {
		t.Errorf("ByDType (-want +got):\n%s", diff)
	}
	if c := s.Compare(999); c.Comparable {
		t.Errorf("a checkpoint with packed weights compared as comparable: %+v", c)
	}
	var sum int64
	for _, g := range s.ByDType {
		sum += g.Bytes
	}
	if sum != s.Bytes {
		t.Errorf("dtype groups sum to %d bytes, total is %d", sum, s.Bytes)
	}
}

func writeFile(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadCheckpointSharded(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "model-00001-of-00002.safetensors", build(t, nil,
		spec{"model.embed_tokens.weight", "BF16", []int64{8, 4}},
		spec{"model.layers.0.mlp.up_proj.weight", "BF16", []int64{4, 4}}))
	writeFile(t, dir, "model-00002-of-00002.safetensors", build(t, nil,
		spec{"model.norm.weight", "BF16", []int64{4}}))
	index, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"total_size": 104},
		"weight_map": map[string]string{
			"model.embed_tokens.weight":         "model-00001-of-00002.safetensors",
			"model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors",
			"model.norm.weight":                 "model-00002-of-00002.safetensors",
		},
	})
	writeFile(t, dir, IndexName, index)
	var calls []int
	ck, err := ReadCheckpoint(context.Background(), DirOpener(dir), Options{Concurrency: 1, Progress: func(done, total int) {
		if total != 2 {
			t.Errorf("progress total = %d, want 2", total)
		}
		calls = append(calls, done)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ck.Files) != 2 || len(ck.Tensors) != 3 || len(ck.Warnings) != 0 {
		t.Errorf("got %d files, %d tensors, warnings %v", len(ck.Files), len(ck.Tensors), ck.Warnings)
	}
	if diff := cmp.Diff([]int{1, 2}, calls); diff != "" {
		t.Errorf("progress calls (-want +got):\n%s", diff)
	}
	if s := Summarize(ck.Tensors, false); s.Params != 52 || s.Bytes != 104 {
		t.Errorf("summary: %d params, %d bytes; want 52, 104", s.Params, s.Bytes)
	}
}

func TestReadCheckpointSingleAndErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, dir, SingleName, build(t, nil, spec{"w", "F32", []int64{3}}))
	ck, err := ReadCheckpoint(ctx, DirOpener(dir), Options{})
	if err != nil || ck.Index != nil || len(ck.Tensors) != 1 {
		t.Fatalf("single file: %v, %+v", err, ck)
	}

	empty := t.TempDir()
	if _, err := ReadCheckpoint(ctx, DirOpener(empty), Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty folder: got %v, want fs.ErrNotExist", err)
	}

	bad := t.TempDir()
	writeFile(t, bad, IndexName, []byte(`{"weight_map":{"w":"../../etc/passwd"}}`))
	if _, err := ReadCheckpoint(ctx, DirOpener(bad), Options{}); err == nil || !strings.Contains(err.Error(), "path separator") {
		t.Errorf("escaping shard name: got %v", err)
	}

	missing := t.TempDir()
	writeFile(t, missing, IndexName, []byte(`{"weight_map":{"w":"model-00001-of-00001.safetensors"}}`))
	if _, err := ReadCheckpoint(ctx, DirOpener(missing), Options{}); err == nil || !strings.Contains(err.Error(), "model-00001-of-00001.safetensors") {
		t.Errorf("missing shard: got %v, want an error naming the shard", err)
	}
}

func TestParseIndex(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"not JSON", `{`, "model.safetensors.index.json"},
		{"no weight map", `{"metadata":{}}`, "missing or empty weight_map"},
		{"negative total", `{"metadata":{"total_size":-1},"weight_map":{"a":"b"}}`, "non-negative"},
		{"absolute shard", `{"weight_map":{"a":"/etc/passwd"}}`, "path separator"},
		{"backslash shard", `{"weight_map":{"a":"..\\x"}}`, "path separator"},
		{"dot-dot shard", `{"weight_map":{"a":".."}}`, "plain file name"},
		{"control character", "{\"weight_map\":{\"a\":\"x\\u0000y\"}}", "control character"},
		{"tensor listed twice", `{"weight_map":{"a":"s1","a":"s2"}}`, `key "weight_map.a" is given twice`},
		{"too many shards", shardIndex(MaxShards + 1), "names more than 10000 shard files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseIndex([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	idx, err := ParseIndex([]byte(`{"metadata":{"total_size":1.5e3},"weight_map":{"a":"s2","b":"s1","c":"s2"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if idx.TotalSize != 1500 || !cmp.Equal(idx.Shards(), []string{"s1", "s2"}) {
		t.Errorf("got total %d shards %v", idx.TotalSize, idx.Shards())
	}
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":104},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"../x"}}`))
	f.Add([]byte(`{"metadata":{"total_size":1e30},"weight_map":{"a":"b"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := ParseIndex(data)
		if err != nil {
			return
		}
		if idx.TotalSize < 0 || len(idx.Shards()) == 0 {
			t.Fatalf("accepted index %+v", idx)
		}
		for _, s := range idx.Shards() {
			if CheckFileName(s) != nil || filepath.Base(s) != s {
				t.Fatalf("accepted shard name %q", s)
			}
		}
	})
}

func TestLayersFrom(t *testing.T) {
	ts := tensors(t,
		spec{"model.layers.0.mlp.up_proj.weight", "BF16", []int64{4, 4}},
		spec{"model.layers.60.mlp.up_proj.weight", "BF16", []int64{4, 4}},
		spec{"model.layers.61.eh_proj.weight", "BF16", []int64{4, 8}},
		spec{"model.layers.61.shared_head.norm.weight", "BF16", []int64{4}},
		spec{"h.12.attn.c_attn.weight", "F32", []int64{2, 2}},
		spec{"model.embed_tokens.weight", "BF16", []int64{8, 4}},
		spec{"model.layers.x.weight", "BF16", []int64{1}},
	)
	got := LayersFrom(ts, 61)
	if got.Tensors != 2 || got.Elements != 36 || got.Bytes != 72 {
		t.Errorf("LayersFrom(61) = %+v", got)
	}
	if got := LayersFrom(ts, 12); got.Tensors != 4 {
		t.Errorf("LayersFrom(12) counted %d tensors, want 4 (layers 60, 61 ×2 and h.12)", got.Tensors)
	}
}

// shardIndex is an index naming n shard files, one tensor each.
func shardIndex(n int) string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("t%d", i)] = fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n)
	}
	b, _ := json.Marshal(map[string]any{"weight_map": m})
	return string(b)
}

// A missing shard stops the reading: no shard is opened after the first
// failure, and the error is that one failure, not one per shard.
func TestReadCheckpointStopsAtFirstError(t *testing.T) {
	const shards = 3000
	var opened atomic.Int64
	open := func(ctx context.Context, name string) (File, error) {
		if name == IndexName {
			return memFile{strings.NewReader(shardIndex(shards))}, nil
		}
		opened.Add(1)
		return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
	}
	_, err := ReadCheckpoint(context.Background(), open, Options{Concurrency: 4})
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want a missing shard", err)
	}
	if n := opened.Load(); n > 8 {
		t.Errorf("%d shards opened after the first was missing", n)
	}
	if len(err.Error()) > 300 {
		t.Errorf("error of %d bytes: %.300s...", len(err.Error()), err)
	}
}

// memFile is an in-memory File.
type memFile struct{ *strings.Reader }

func (memFile) Close() error { return nil }
