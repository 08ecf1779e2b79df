package memory

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

func TestTensorBytes(t *testing.T) {
	mustFormat := func(name string, dq bool) WeightFormat {
		f, err := ParseWeightFormat(name, dq)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	const n4k = 4096 * 4096
	tests := []struct {
		name    string
		f       WeightFormat
		in, out int64
		want    units.Bytes
	}{
		{"bf16", mustFormat("bf16", false), 4096, 4096, 2 * n4k},
		{"fp32", mustFormat("fp32", false), 4096, 4096, 4 * n4k},
		// qweight 512×4096×4 + qzeros 32×512×4 + scales 32×4096×2 + g_idx 4096×4
		{"gptq int4 g128", mustFormat("int4", false), 4096, 4096, 8_388_608 + 65_536 + 262_144 + 16_384},
		{"awq int4 g128", mustFormat("awq", false), 4096, 4096, 8_388_608 + 65_536 + 262_144},
		// bitsandbytes: n/2 + 4·n/64, or n/2 + n/64 + 4·⌈n/64/256⌉
		{"nf4", mustFormat("nf4", false), 4096, 4096, n4k/2 + 4*n4k/64},
		{"nf4 double quant", mustFormat("nf4", true), 4096, 4096, n4k/2 + n4k/64 + 4*(n4k/64/256)},
		{"fp8 per tensor", mustFormat("fp8", false), 4096, 4096, n4k + 4},
		{"int8 per row", mustFormat("int8", false), 4096, 11008, 4096*11008 + 4*11008},
		// gpt-oss expert: n/2 + n/32 (4.25 bits)
		{"mxfp4", mustFormat("mxfp4", false), 2880, 5760, 2880*5760/2 + 2880*5760/32},
		{"nvfp4", mustFormat("nvfp4", false), 4096, 4096, n4k/2 + n4k/16 + 4},
		// DeepSeek-V3 expert-sized tile grid: 56 × 144 fp32 scales
		{"fp8 block 128", WeightFormat{Layout: LayoutFP8Block, Bits: 8, Group: 128}, 7168, 18432, 7168*18432 + 56*144*4},
		{"gptq one group", WeightFormat{Layout: LayoutGPTQ, Bits: 4, Group: -1}, 4096, 4096, 8_388_608 + 512*4 + 4096*2 + 4096*4},
		{"unknown shape", mustFormat("bf16", false), 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.TensorBytes(tt.in, tt.out, tt.in*tt.out); got != tt.want {
				t.Errorf("TensorBytes(%d, %d) = %d, want %d", tt.in, tt.out, got, tt.want)
			}
		})
	}
}

func TestTensorBytesNeverNegative(t *testing.T) {
	for _, name := range WeightFormatNames() {
		f, err := ParseWeightFormat(name, true)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, dims := range [][3]int64{{1 << 40, 1 << 40, 0}, {-5, 3, 0}, {0, 0, -1}, {1, 1, 1}} {
			if b := f.TensorBytes(dims[0], dims[1], dims[2]); b < 0 {
				t.Errorf("%s %v: %d bytes", name, dims, b)
			}
		}
	}
}

func TestQLoRAStorageMatchesModelDoc(t *testing.T) {
	// MODEL.md §6.2: Llama-2-7B linears 6,476,005,376 params → 3.016 GiB
	// data + 0.377 GiB constants; the other 262.4 M params in bf16.
	const linear, rest = 6_476_005_376, 6_738_415_616 - 6_476_005_376
	r := mustEstimate(t, testModel(llama2_7b), Job{Mode: Inference, Dtype: "nf4", PromptLen: 1})
	want := units.Bytes(linear/2 + linear/64*4 + 2*rest)
	if got := component(t, r, "weights").Bytes; got != want {
		t.Errorf("nf4 weights = %d, want %d", got, want)
	}
}

func TestCheckpointQuantization(t *testing.T) {
	oss := denseShape{id: "openai/gpt-oss-20b", layers: 24, hidden: 2880, heads: 64, kvHeads: 8, headDim: 64, ffn: 2880, vocab: 201088, maxPos: 131072,
		window: 128, types: []model.AttnKind{model.SlidingAttention, model.FullAttention},
		moe:   &model.MoE{Experts: 32, ExpertsPerToken: 4, ExpertFFN: 2880},
		quant: &model.Quantization{Method: "mxfp4", SkipModules: []string{"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}}
	m := testModel(oss)
	p, err := planWeights(m, Job{})
	if err != nil {
		t.Fatal(err)
	}
	var expert, other int64
	var got units.Bytes
	for _, mod := range m.Modules {
		if mod.Expert {
			expert += mod.Params
		} else {
			other += mod.Params
		}
		got += p.moduleBytes(mod)
		if strings.Contains(mod.Name, "self_attn") && p.quantizes(mod) {
			t.Errorf("%s is in modules_to_not_convert but quantized", mod.Name)
		}
	}
	if want := units.Bytes(expert/2 + expert/32 + 2*other); got != want {
		t.Errorf("gpt-oss weights = %d, want %d (experts mxfp4, rest bf16)", got, want)
	}
}

func TestCheckpointFormats(t *testing.T) {
	tests := []struct {
		name   string
		q      model.Quantization
		layout QuantLayout
		known  bool
	}{
		{"gptq", model.Quantization{Method: "gptq", Bits: 4, GroupSize: 128}, LayoutGPTQ, true},
		{"awq", model.Quantization{Method: "awq", Raw: map[string]any{"bits": 4.0, "group_size": 128.0}}, LayoutAWQ, true},
		{"deepseek fp8", model.Quantization{Method: "fp8", Raw: map[string]any{"weight_block_size": []any{128.0, 128.0}}}, LayoutFP8Block, true},
		{"fp8 per tensor", model.Quantization{Method: "fp8"}, LayoutFP8Tensor, true},
		{"bnb nf4", model.Quantization{Method: "bitsandbytes", Raw: map[string]any{"load_in_4bit": true, "bnb_4bit_quant_type": "nf4"}}, LayoutBnb4, true},
		{"bnb 8bit", model.Quantization{Method: "bitsandbytes", Raw: map[string]any{"load_in_8bit": true}}, LayoutInt8Row, true},
		{"modelopt nvfp4", model.Quantization{Method: "modelopt", Raw: map[string]any{"quant_algo": "NVFP4"}}, LayoutNVFP4, true},
		{"compressed-tensors w4a16", model.Quantization{Method: "compressed-tensors", Raw: map[string]any{"config_groups": map[string]any{
			"group_0": map[string]any{"weights": map[string]any{"num_bits": 4.0, "type": "int", "strategy": "group", "group_size": 128.0}}}}}, LayoutAWQ, true},
		{"unknown with bits", model.Quantization{Method: "hqq", Bits: 4}, LayoutPlain, false},
		{"unknown", model.Quantization{Method: "mystery"}, LayoutPlain, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, known := checkpointFormat(&tt.q)
			if f.Layout != tt.layout || known != tt.known {
				t.Errorf("checkpointFormat = %s (%s), known %v; want %s, known %v", f.Name, f.Layout, known, tt.layout, tt.known)
			}
		})
	}
}

func TestUnknownQuantizationWarns(t *testing.T) {
	d := llama2_7b
	d.quant = &model.Quantization{Method: "mystery", Bits: 3}
	r := mustEstimate(t, testModel(d), Job{Mode: Inference, PromptLen: 8})
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], `"mystery"`) {
		t.Errorf("warnings = %q, want the unknown quant_method named", r.Warnings)
	}
}

func TestModuleMatches(t *testing.T) {
	tests := []struct {
		name, pattern string
		want          bool
	}{
		{"model.layers.*.self_attn.q_proj", "model.layers.*.self_attn", true},
		{"model.layers.*.self_attn.q_proj", "self_attn", true},
		{"lm_head", "lm_head", true},
		{"model.layers.*.mlp.experts.gate_up_proj", "model.layers.*.self_attn", false},
		{"model.layers.*.mlp.router", "model.layers.3.mlp.router", true},
		{"model.layers.*.mlp.down_proj", "", false},
		{"model.embed_tokens", "model.embed_tokens.weight", false},
	}
	for _, tt := range tests {
		if got := moduleMatches(tt.name, tt.pattern); got != tt.want {
			t.Errorf("moduleMatches(%q, %q) = %v, want %v", tt.name, tt.pattern, got, tt.want)
		}
	}
}

func TestBnbComputeDtypeWidensOnlyTheDequantizedCopy(t *testing.T) {
	// transformers' BitsAndBytesConfig default: fp32 compute, other tensors
	// in 16 bits; the prefill dequantizes the largest Linear (11008×4096 in
	// Llama-2-7B) to 16 bits and casts it to fp32: 6 B per element.
	const linear, rest = 6_476_005_376, 6_738_415_616 - 6_476_005_376
	r := mustEstimate(t, testModel(llama2_7b), Job{Mode: Inference, Dtype: "fp4", ComputeDtype: "fp32", PromptLen: 64})
	if got, want := component(t, r, "weights").Bytes, units.Bytes(linear/2+linear/64*4+2*rest); got != want {
		t.Errorf("weights %d, want %d (non-quantized tensors in 16 bits)", got, want)
	}
	act := component(t, r, "activations")
	if !strings.Contains(act.Formula, "11008×4096 × 6B") {
		t.Errorf("activations formula %q, want the 6-byte dequantized copy of the largest Linear", act.Formula)
	}
	r16 := mustEstimate(t, testModel(llama2_7b), Job{Mode: Inference, Dtype: "fp4", ComputeDtype: "bf16", PromptLen: 64})
	if d := act.Bytes - component(t, r16, "activations").Bytes; d != units.Bytes(4*11008*4096) {
		t.Errorf("fp32 - bf16 compute = %d bytes, want the 4-byte fp32 copy %d", d, 4*11008*4096)
	}
}
