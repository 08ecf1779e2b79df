package model

import (
	"slices"
	"testing"
)

func mustLookup(t testing.TB, name string) *Model {
	t.Helper()
	m, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// attnKinds returns the attention kind of each layer.
func attnKinds(s Stack) []AttnKind {
	out := make([]AttnKind, len(s.LayerTypes))
	for i, lt := range s.LayerTypes {
		out[i] = lt.Attention
	}
	return out
}

func TestLayerTypes(t *testing.T) {
	const F, S, N = FullAttention, SlidingAttention, NoSelfAttention
	tests := []struct {
		model  string
		window int
		first  []AttnKind // the first layers' kinds
	}{
		{"gemma2-9b", 4096, []AttnKind{S, F, S, F}},
		{"gemma3-1b", 512, []AttnKind{S, S, S, S, S, F, S}},
		{"gpt-oss-20b", 128, []AttnKind{S, F, S, F}},
		{"mistral-7b", 4096, []AttnKind{S, S, S}},
		{"mistral-nemo-12b", 0, []AttnKind{F, F, F}},
		{"qwen2.5-7b", 0, []AttnKind{F, F, F}},
		{"llama3.2-11b-vision", 0, []AttnKind{F, F, F, N, F, F, F, F, N}},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			m := mustLookup(t, tt.model)
			got := attnKinds(m.Text)[:len(tt.first)]
			if !slices.Equal(got, tt.first) || m.Text.SlidingWindow != tt.window {
				t.Errorf("layers %v window %d, want %v window %d", got, m.Text.SlidingWindow, tt.first, tt.window)
			}
		})
	}
}

func TestMoELayers(t *testing.T) {
	tests := []struct {
		model       string
		dense       int // leading dense layers
		experts, k  int
		shared      int
		sharedWidth int
	}{
		{"deepseek-v3", 3, 256, 8, 1, 2048},
		{"deepseek-v2-lite", 1, 64, 6, 2, 2816},
		{"qwen3-30b-a3b", 0, 128, 8, 0, 0},
		{"qwen1.5-moe-a2.7b", 0, 60, 4, 1, 5632},
		{"mixtral-8x7b", 0, 8, 2, 0, 0},
		{"olmoe-1b-7b", 0, 64, 8, 0, 0},
		{"gpt-oss-120b", 0, 128, 4, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			m := mustLookup(t, tt.model)
			moe := m.Text.MoE
			if moe == nil {
				t.Fatal("no MoE")
			}
			if moe.Experts != tt.experts || moe.ExpertsPerToken != tt.k || moe.SharedExperts != tt.shared || moe.SharedFFN != tt.sharedWidth {
				t.Errorf("MoE %+v, want experts %d top-%d shared %d×%d", *moe, tt.experts, tt.k, tt.shared, tt.sharedWidth)
			}
			for i, lt := range m.Text.LayerTypes {
				if lt.MoE != (i >= tt.dense) {
					t.Errorf("layer %d MoE = %v, want %v", i, lt.MoE, i >= tt.dense)
				}
			}
		})
	}
}

func TestLayerParams(t *testing.T) {
	m := mustLookup(t, "llama2-7b")
	// MODEL.md §1.1: P_layer = 67,108,864 + 135,266,304 + 8,192.
	for _, i := range []int{0, 17, 31} {
		if got := m.LayerParams(StackText, i); got != 202383360 {
			t.Errorf("LayerParams(%d) = %d, want 202383360", i, got)
		}
	}
	if got := m.LayerParams(StackText, 32); got != 0 {
		t.Errorf("LayerParams(32) = %d, want 0", got)
	}
	if got, want := m.OutsideLayerParams(StackText), int64(2*32000*4096+4096); got != want {
		t.Errorf("OutsideLayerParams = %d, want %d", got, want)
	}
	ds := mustLookup(t, "deepseek-v3")
	if dense, moe := ds.LayerParams(StackText, 2), ds.LayerParams(StackText, 3); dense >= moe {
		t.Errorf("DeepSeek-V3 dense layer %d >= MoE layer %d", dense, moe)
	}
}

func TestMatchLinears(t *testing.T) {
	tests := []struct {
		model   string
		targets []string
		want    []string // short names matched, in module order
	}{
		{"llama2-7b", []string{"q_proj", "v_proj"}, []string{"q_proj", "v_proj"}},
		{"llama2-7b", []string{"all-linear"}, []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}},
		{"phi3-mini", []string{"all-linear"}, []string{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}},
		{"gpt2", []string{"c_attn"}, []string{"c_attn"}},
		{"mixtral-8x7b", []string{"w1", "w2", "w3"}, []string{"w1", "w2", "w3"}},
		{"bert-base", []string{"query", "value"}, []string{"query", "value"}},
		{"t5-base", []string{"q", "v"}, []string{"q", "v", "q", "v", "q", "v"}},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.targets[0], func(t *testing.T) {
			var got []string
			for _, mod := range mustLookup(t, tt.model).MatchLinears(tt.targets) {
				got = append(got, mod.Short)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("matched %v, want %v", got, tt.want)
			}
		})
	}
	// all-linear takes every nn.Linear but the output head, vision tower included.
	var stacks []string
	for _, mod := range mustLookup(t, "llava-1.5-7b").MatchLinears([]string{"all-linear"}) {
		if mod.Component == CompLMHead {
			t.Errorf("all-linear matched the head %s", mod.Name)
		}
		if !slices.Contains(stacks, mod.Stack) {
			stacks = append(stacks, mod.Stack)
		}
	}
	if want := []string{StackVision, StackText, StackProjector}; !slices.Equal(stacks, want) {
		t.Errorf("all-linear stacks %v, want %v", stacks, want)
	}
	// gpt-oss experts are fused parameters: all-linear skips them, names match.
	oss := mustLookup(t, "gpt-oss-20b")
	for _, mod := range oss.MatchLinears([]string{"all-linear"}) {
		if mod.Expert {
			t.Errorf("all-linear matched fused experts %s", mod.Name)
		}
	}
	if n := len(oss.MatchLinears([]string{"gate_up_proj"})); n != 1 {
		t.Errorf("gate_up_proj matched %d groups, want 1", n)
	}
}

func TestByComponentOrder(t *testing.T) {
	var got []string
	for _, c := range mustLookup(t, "mixtral-8x7b").ByComponent() {
		got = append(got, c.Component)
	}
	want := []string{CompEmbedding, CompAttention, CompExperts, CompRouter, CompNorm, CompFinalNorm, CompLMHead}
	if !slices.Equal(got, want) {
		t.Errorf("components %v, want %v", got, want)
	}
}

func TestInventoryIsCompact(t *testing.T) {
	for name, limit := range map[string]int{"deepseek-v3": 40, "qwen3-235b-a22b": 20, "llama3.1-405b": 15, "llama3.2-11b-vision": 250} {
		if n := len(mustLookup(t, name).Modules); n > limit {
			t.Errorf("%s has %d module groups, want at most %d", name, n, limit)
		}
	}
}

func TestVisionTowers(t *testing.T) {
	tests := []struct {
		model              string
		layers, hidden     int
		image, patch, toks int
	}{
		{"llava-1.5-7b", 24, 1024, 336, 14, 576},
		{"gemma3-4b", 27, 1152, 896, 14, 256},
		{"qwen2-vl-7b", 32, 1280, 448, 14, 256},
		{"qwen2.5-vl-7b", 32, 1280, 448, 14, 256},
		{"qwen3-vl-8b", 27, 1152, 448, 16, 196},
		{"phi3.5-vision", 24, 1024, 336, 14, 144},
		{"llama3.2-11b-vision", 40, 1280, 448, 14, 4 * 1025},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			v := mustLookup(t, tt.model).Vision
			if v == nil {
				t.Fatal("no vision tower")
			}
			if v.Layers != tt.layers || v.Hidden != tt.hidden || v.ImageSize != tt.image || v.PatchSize != tt.patch || v.TokensPerImage != tt.toks {
				t.Errorf("vision layers %d hidden %d image %d patch %d tokens %d; want %d %d %d %d %d",
					v.Layers, v.Hidden, v.ImageSize, v.PatchSize, v.TokensPerImage, tt.layers, tt.hidden, tt.image, tt.patch, tt.toks)
			}
		})
	}
}

func TestEncoderDecoder(t *testing.T) {
	m := mustLookup(t, "t5-base")
	if m.Encoder == nil || m.Encoder.Causal || !m.Text.Causal || !m.Text.LayerTypes[0].CrossAttention {
		t.Fatalf("t5: encoder %+v, decoder causal %v", m.Encoder, m.Text.Causal)
	}
	var rel []Module
	for _, mod := range m.Modules {
		if lastElem(mod.Name) == "relative_attention_bias" {
			rel = append(rel, mod)
		}
	}
	if len(rel) != 2 || rel[0].Layer != 0 || rel[0].Layers != 1 || rel[0].Params != 32*12 {
		t.Errorf("relative attention biases %+v, want one 32×12 table in block 0 of each stack", rel)
	}
	b := mustLookup(t, "bert-base")
	if b.Text.Causal || b.Encoder != nil {
		t.Errorf("bert: causal %v, encoder %v; want a non-causal Text stack", b.Text.Causal, b.Encoder)
	}
}

func TestQuantization(t *testing.T) {
	tests := []struct {
		model, method string
		bits, group   int
		skip          int
	}{
		{"gpt-oss-20b", "mxfp4", 4, 0, 4},
		{"deepseek-v3", "fp8", 8, 128, 0},
		{"qwen-72b-chat-int4", "gptq", 4, 128, 0},
	}
	for _, tt := range tests {
		q := mustLookup(t, tt.model).Quant
		if q == nil || q.Method != tt.method || q.Bits != tt.bits || q.GroupSize != tt.group || len(q.SkipModules) != tt.skip {
			t.Errorf("%s: quantization %+v, want %s %d-bit group %d, %d skipped", tt.model, q, tt.method, tt.bits, tt.group, tt.skip)
		}
	}
	if q := mustLookup(t, "llama2-7b").Quant; q != nil {
		t.Errorf("llama2-7b: quantization %+v, want none", q)
	}
}

func TestLlama4Text(t *testing.T) {
	// A small Llama 4 text config: MoE on odd layers (step 2), NoPE every
	// 4th layer (full attention), chunked attention elsewhere.
	m, err := Parse([]byte(`{"model_type": "llama4_text", "hidden_size": 64, "num_hidden_layers": 4,
		"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 32,
		"intermediate_size_mlp": 128, "num_local_experts": 4, "num_experts_per_tok": 1,
		"interleave_moe_layer_step": 2, "vocab_size": 100, "attention_chunk_size": 8}`))
	if err != nil {
		t.Fatal(err)
	}
	const h = 64
	attn := int64(h*64 + 2*h*32 + 64*h)
	dense := attn + 3*h*128 + 2*h
	moe := attn + h*4 + 4*(h*2*32+32*h) + 3*h*32 + 2*h
	want := 2*100*h + 2*dense + 2*moe + h
	if got := m.TotalParams(); got != want {
		t.Errorf("TotalParams = %d, want %d", got, want)
	}
	if got, want := attnKinds(m.Text), []AttnKind{ChunkedAttention, ChunkedAttention, ChunkedAttention, FullAttention}; !slices.Equal(got, want) {
		t.Errorf("layer kinds %v, want %v", got, want)
	}
	if active := m.ActiveParams(); active != want-2*3*(h*2*32+32*h) {
		t.Errorf("ActiveParams = %d, want %d", active, want-2*3*(h*2*32+32*h))
	}
}

func BenchmarkParseAndCount(b *testing.B) {
	data, err := catalogFS.ReadFile("catalog/deepseek-ai__DeepSeek-V3.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if m.TotalParams() <= m.ActiveParams() {
			b.Fatal("bad counts")
		}
	}
}

func TestBERTHeads(t *testing.T) {
	const h, v, f, L, pos = 768, 30522, 3072, 12, 512
	embeddings := int64(v*h + pos*h + 2*h + 2*h)
	layer := int64(4*(h*h+h) + 2*h + (h*f + f) + (f*h + h) + 2*h)
	body := embeddings + L*layer
	pooler := int64(h*h + h)
	mlm := int64(h*h+h) + 2*h + v
	tests := []struct {
		arch  string
		extra string
		want  int64
	}{
		{"BertModel", "", body + pooler},
		{"BertForMaskedLM", "", body + mlm},
		{"BertForPreTraining", "", body + pooler + mlm + 2*h + 2},
		{"BertForSequenceClassification", `, "id2label": {"0": "a", "1": "b", "2": "c"}`, body + pooler + 3*h + 3},
		{"BertForTokenClassification", `, "num_labels": 9`, body + 9*h + 9},
	}
	for _, tt := range tests {
		t.Run(tt.arch, func(t *testing.T) {
			m, err := Parse([]byte(`{"model_type": "bert", "architectures": ["` + tt.arch + `"]` + tt.extra + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := m.TotalParams(); got != tt.want {
				t.Errorf("TotalParams = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestLlama4Vision(t *testing.T) {
	text := `{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
		"head_dim": 16, "intermediate_size": 32, "intermediate_size_mlp": 128, "num_local_experts": 2,
		"num_experts_per_tok": 1, "vocab_size": 100}`
	vision := `{"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 48,
		"image_size": 56, "patch_size": 14, "pixel_shuffle_ratio": 0.5, "projector_input_dim": 24,
		"projector_output_dim": 24, "vision_output_dim": 24}`
	whole, err := Parse([]byte(`{"model_type": "llama4", "text_config": ` + text + `, "vision_config": ` + vision + `}`))
	if err != nil {
		t.Fatal(err)
	}
	alone, err := Parse([]byte(`{"model_type": "llama4_text", ` + text[1:]))
	if err != nil {
		t.Fatal(err)
	}
	const h, f, side = 32, 48, 4
	layer := int64(4*(h*h+h) + (h*f + f) + (f*h + h) + 4*h)
	tower := int64(3*14*14*h+h+(side*side+1)*h+4*h) + 2*layer
	adapter := int64(f*24 + 24*24)
	projector := int64(24 * 64)
	if got, want := whole.TotalParams()-alone.TotalParams(), tower+adapter+projector; got != want {
		t.Errorf("vision + projector = %d, want %d", got, want)
	}
	// One 56-px tile pixel-shuffled 2×2: 4 tokens, with <|image_start|>,
	// <|image|> and <|image_end|> (processing_llama4.py).
	v := whole.Vision
	if v == nil || v.TokensPerImage != side*side/4+3 {
		t.Fatalf("vision %+v, want %d tokens per image", v, side*side/4+3)
	}
	// A 150-px square fits a 3×3 canvas of 56-px tiles: 9 tiles with a
	// separator each, and the global tile.
	if got, want := v.Image(150), (ImageShape{Tiles: 10, Patches: side * side, Tokens: 9*(4+1) + 4 + 3}); got != want {
		t.Errorf("Image(150) = %+v, want %+v", got, want)
	}
}

// TestMllamaVisionEmbeddings pins the Llama-3.2-11B-Vision tensors whose
// size follows image_size (MllamaPrecomputedPositionEmbedding and
// MllamaPrecomputedAspectRatioEmbedding in transformers'
// models/mllama/modeling_mllama.py). The base checkpoint's tiles are 448
// px with 14 px patches (Meta's sku_list gives it vision_chunk_size 448;
// only the Instruct release uses 560): 32² + 1 (CLS) = 1025 positions per
// tile, 4 tiles, and 8 supported aspect ratios + 1 = 9 embedding rows.
func TestMllamaVisionEmbeddings(t *testing.T) {
	const (
		hidden    = 1280
		positions = (448/14)*(448/14) + 1 // 1025
		tiles     = 4
		ratioRows = 8 + 1
	)
	tests := []struct {
		name string
		want int64
	}{
		// embedding: Parameter(num_patches, hidden)
		{"model.vision_model.gated_positional_embedding.embedding", positions * hidden},
		// tile_embedding: Embedding(max_aspect_ratio_id + 1, max_num_tiles × num_patches × hidden)
		{"model.vision_model.gated_positional_embedding.tile_embedding", ratioRows * tiles * positions * hidden},
		// Embedding(max_aspect_ratio_id + 1, max_num_tiles × hidden)
		{"model.vision_model.pre_tile_positional_embedding.embedding", ratioRows * tiles * hidden},
		{"model.vision_model.post_tile_positional_embedding.embedding", ratioRows * tiles * hidden},
		// Conv2d(3, hidden, 14, stride 14, bias=False): no dependence on image_size
		{"model.vision_model.patch_embedding", 3 * 14 * 14 * hidden},
	}
	mods := map[string]int64{}
	for _, mod := range mustLookup(t, "llama3.2-11b-vision").Modules {
		mods[mod.Name] = mod.Params
	}
	for _, tt := range tests {
		got, ok := mods[tt.name]
		if !ok {
			t.Errorf("%s: missing", tt.name)
			continue
		}
		if got != tt.want {
			t.Errorf("%s: %d parameters, want %d", tt.name, got, tt.want)
		}
	}
}

func TestTorchDtype(t *testing.T) {
	for name, want := range map[string]string{"llama2-7b": "float16", "qwen3-vl-8b": "bfloat16", "t5-base": ""} {
		if got := mustLookup(t, name).TorchDtype; got != want {
			t.Errorf("%s: TorchDtype %q, want %q", name, got, want)
		}
	}
}

func TestStableLM(t *testing.T) {
	// stabilityai/stablelm-2-1_6b: 1,644,515,328 parameters on its model card.
	m, err := Parse([]byte(`{"model_type": "stablelm", "architectures": ["StableLmForCausalLM"], "hidden_size": 2048,
		"intermediate_size": 5632, "num_attention_heads": 32, "num_hidden_layers": 24, "num_key_value_heads": 32,
		"vocab_size": 100352, "use_qkv_bias": true, "tie_word_embeddings": false}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.TotalParams(); got != 1644515328 {
		t.Errorf("TotalParams = %d, want 1644515328", got)
	}
	// qk_layernorm adds one LayerNorm weight per head and head dim, for q and k.
	qk, err := Parse([]byte(`{"model_type": "stablelm", "hidden_size": 64, "num_attention_heads": 4,
		"num_key_value_heads": 2, "num_hidden_layers": 1, "intermediate_size": 8, "vocab_size": 10,
		"qk_layernorm": true, "use_parallel_residual": true}`))
	if err != nil {
		t.Fatal(err)
	}
	want := int64(2*10*64 + (64*64 + 2*64*32 + 64*64) + 64 + 32 + 3*64*8 + 2*64 + 2*64)
	if got := qk.TotalParams(); got != want {
		t.Errorf("qk_layernorm, parallel residual: TotalParams = %d, want %d", got, want)
	}
}
