package memory

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
)

// TestPEFTTrainableParams counts each PEFT method's trainable parameters
// on Llama-3.2-3B (h 3072, q 3072, k/v 1024, f 8192, 28 layers) from the
// shapes its layer creates (peft/tuners/<method>/layer.py @v0.18.0), and
// checks the count against the num_trainable_params PEFT's MetaMathQA
// benchmark printed for the same configuration
// (huggingface/peft method_comparison/MetaMathQA/results/<method>--llama-3.2-3B-*.json
// @5d602fd, their adapter_config.json beside them).
func TestPEFTTrainableParams(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.2-3B")
	const L, h, q, kv, f = 28, 3072, 3072, 1024, 8192
	qv := []string{"q_proj", "v_proj"}
	all7 := []string{"q_proj", "k_proj", "v_proj", "o_proj", "down_proj", "gate_proj", "up_proj"}
	tests := []struct {
		name  string
		job   Job
		arith int64 // from the layer's shapes
		bench int64 // PEFT's benchmark result
	}{
		{"lora r32 q,v", Job{PEFTVariant: "lora", LoRARank: 32, LoRATargets: qv},
			L * 32 * ((h + q) + (h + kv)), 9175040},
		// IA3 default for llama: k, v scale their outputs, down_proj
		// (feedforward) its input.
		{"ia3 default", Job{PEFTVariant: "IA3"}, L * (kv + kv + f), 286720},
		{"ia3 all linear", Job{PEFTVariant: "ia3", LoRATargets: all7, FeedforwardModules: []string{"down_proj", "gate_proj", "up_proj"}},
			L * (q + kv + kv + h + f + h + h), 630784},
		// LoHa: hada_w1_a, hada_w2_a out×r, hada_w1_b, hada_w2_b r×in.
		{"loha r32", Job{PEFTVariant: "LOHA", LoRARank: 32, LoRATargets: qv},
			L * 2 * 32 * ((h + q) + (h + kv)), 18350080},
		// LoKr factor 4: 3072 = 4·768, 1024 = 4·256; w1 4×4 whole; r 32
		// < 768/2 splits w2 into b×32 and 32×d.
		{"lokr r32 factor 4", Job{PEFTVariant: "lokr", LoRARank: 32, DecomposeFactor: 4, LoRATargets: qv},
			L * ((4*4 + 768*32 + 32*768) + (4*4 + 256*32 + 32*768)), 2294656},
		// OFT r 32: blocks of 3072/32 = 96, b(b−1)/2 each.
		{"oft r32", Job{PEFTVariant: "oft", LoRARank: 32, LoRATargets: qv},
			L * 2 * 32 * (96 * 95 / 2), 8171520},
		// BOFT block 4, one butterfly factor: 768 blocks of 4×4 + boft_s.
		{"boft default", Job{PEFTVariant: "boft", LoRATargets: qv},
			L * ((768*16 + q) + (768*16 + kv)), 802816},
		// AdaLoRA init_r 64: lora_A r×in, lora_E r, lora_B out×r.
		{"adalora init_r 64", Job{PEFTVariant: "adalora", LoRARank: 64, LoRATargets: qv},
			L * (64*(h+q) + 64 + 64*(h+kv) + 64), 18353664},
		// VeRA r 256: lambda_b of out, lambda_d of r.
		{"vera r256", Job{PEFTVariant: "vera", LoRATargets: qv},
			L * ((q + 256) + (kv + 256)), 129024},
		// Prefix tuning: Embedding(n, L·2·token_dim), token_dim = the KV
		// width under grouped-query attention.
		{"prefix 200", Job{PEFTVariant: "PREFIX_TUNING", NumVirtualTokens: 200}, 200 * L * 2 * kv, 11468800},
		{"prefix 50", Job{PEFTVariant: "prefix-tuning", NumVirtualTokens: 50}, 50 * L * 2 * kv, 2867200},
		{"prompt 200", Job{PEFTVariant: "prompt_tuning", NumVirtualTokens: 200}, 200 * h, 614400},
		// P-tuning MLP: Embedding(n, h), Linear(h, h), Linear(h, h),
		// Linear(h, h), with biases.
		{"p-tuning 20", Job{PEFTVariant: "P_TUNING", NumVirtualTokens: 20}, 20*h + 3*(h*h+h), 28382208},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.arith != tt.bench {
				t.Fatalf("the shapes give %d, PEFT printed %d", tt.arith, tt.bench)
			}
			job := tt.job
			job.Method, job.SeqLen = "lora", 768
			r := estimateOK(t, m, job)
			if r.TrainableParams != tt.arith {
				t.Errorf("trainable %d, want %d", r.TrainableParams, tt.arith)
			}
			checkParts(t, r)
		})
	}
}

// TestPEFTMoreShapes checks the arithmetic of the options the benchmark
// does not use: LoKr with decompose_both and the square-root
// factorization, OFT by block size (adjusted to a divisor as PEFT does),
// BOFT by block count with a butterfly factor, prefix projection.
func TestPEFTMoreShapes(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.2-3B")
	const L, h, kv = 28, 3072, 1024
	qv := []string{"q_proj", "v_proj"}
	tests := []struct {
		name string
		job  Job
		want int64
	}{
		// factorization(3072, -1) = (48, 64), (1024, -1) = (32, 32); r 8
		// < 64/2 splits w2 of q; for v, 8 < 32/2 too; decompose_both
		// splits w1 (48×48 and 32×48) when 8 < 48/2.
		{"lokr r8 sqrt", Job{PEFTVariant: "lokr", LoRARank: 8, LoRATargets: qv},
			L * ((48*48 + 64*8 + 8*64) + (32*48 + 32*8 + 8*64))},
		{"lokr r8 sqrt both", Job{PEFTVariant: "lokr", LoRARank: 8, DecomposeBoth: true, LoRATargets: qv},
			L * ((48*8 + 8*48 + 64*8 + 8*64) + (32*8 + 8*48 + 32*8 + 8*64))},
		// oft_block_size 32 (the default): 96 blocks of 32.
		{"oft block 32", Job{PEFTVariant: "oft", LoRATargets: qv}, L * 2 * 96 * (32 * 31 / 2)},
		// oft_block_size 100 does not divide 3072: PEFT adjusts to 96.
		{"oft block 100", Job{PEFTVariant: "oft", OFTBlockSize: 100, LoRATargets: qv}, L * 2 * 32 * (96 * 95 / 2)},
		// 8 blocks of 384 with butterfly factor 2: 2 × 8 × 384².
		{"boft 8 blocks factor 2", Job{PEFTVariant: "boft", BOFTBlockNum: 8, BOFTButterflyFactor: 2, LoRATargets: qv},
			L * ((2*8*384*384 + h) + (2*8*384*384 + kv))},
		// Embedding(n, d) + Linear(d, H) + Linear(H, L·2·d), d = 1024, H = 512.
		{"prefix projection", Job{PEFTVariant: "prefix-tuning", NumVirtualTokens: 10, PrefixProjection: true, EncoderHiddenSize: 512},
			10*kv + (kv*512 + 512) + (512*L*2*kv + L*2*kv)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := tt.job
			job.Method, job.SeqLen = "lora", 512
			if r := estimateOK(t, m, job); r.TrainableParams != tt.want {
				t.Errorf("trainable %d, want %d", r.TrainableParams, tt.want)
			}
		})
	}
}

// peftLayerDelta is what the adapters add to one (non-lowest) text layer
// of m: the layer's inventory with them less the frozen layer's.
func peftLayerDelta(t *testing.T, m *model.Model, job Job) layerAct {
	t.Helper()
	job.SeqLen = 1024
	var s setup
	if err := s.init(m, job); err != nil {
		t.Fatal(err)
	}
	r := s.actRegime()
	lt := layerTypeAt(&m.Text, 1)
	with := decoderLayer(&m.Text, lt, &r)
	r.lora = nil
	without := decoderLayer(&m.Text, lt, &r)
	return layerAct{with.lin - without.lin, with.quad - without.quad, with.fixed - without.fixed}
}

// TestPEFTActivations builds what each method adds to a layer's saved
// tensors from its forward (peft/tuners/<method>/layer.py @v0.18.0), on
// Llama-3.2-3B in pure bf16 with PEFT's fp32 adapters (c = 2, a = 4).
func TestPEFTActivations(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.2-3B")
	const h, q, kv, f = 3072, 3072, 1024, 8192
	qv := []string{"q_proj", "v_proj"}
	tests := []struct {
		name string
		job  Job
		want layerAct
	}{
		// k and v keep their bf16 base outputs for the vector's gradient;
		// down_proj keeps the fp32 cast of its input.
		{"ia3", Job{PEFTVariant: "ia3"}, layerAct{lin: 2*kv + 2*kv + 4*f}},
		// With bf16 adapters the cast is the input itself: the MLP hidden
		// state, which the frozen layer does not keep.
		{"ia3 bf16 adapters", Job{PEFTVariant: "ia3", AdapterDtype: "bf16"}, layerAct{lin: 2*kv + 2*kv + 2*f}},
		// Two fp32 casts of the attention input, and the fp32 ΔW of q
		// (h×q) and v (h×kv), kept by F.linear for the input's gradient.
		{"loha", Job{PEFTVariant: "loha", LoRARank: 4, LoRATargets: qv}, layerAct{lin: 4*h + 4*h, fixed: 4 * (h*q + h*kv)}},
		{"lokr", Job{PEFTVariant: "lokr", LoRARank: 4, LoRATargets: qv}, layerAct{lin: 4*h + 4*h, fixed: 4 * (h*q + h*kv)}},
		// OFT: the fp32 casts, and the 96 blocks of 32×32 per module.
		{"oft", Job{PEFTVariant: "oft", LoRATargets: qv}, layerAct{lin: 4*h + 4*h, fixed: 4 * 2 * 96 * 32 * 32}},
		// BOFT: the shared bf16 input once; per module the bf16 copy of
		// boft_P (h²), the identity (h²), the rotated and the scaled
		// weight (h·out each).
		{"boft", Job{PEFTVariant: "boft", LoRATargets: qv}, layerAct{lin: 2 * h, fixed: 2 * (2*h*h + 2*h*q + 2*h*h + 2*h*kv)}},
		// VeRA r 256: the fp32 r-wide and out-wide products per module.
		{"vera", Job{PEFTVariant: "vera", LoRATargets: qv}, layerAct{lin: 4*(256+q) + 4*(256+kv)}},
		{"vera dropout", Job{PEFTVariant: "vera", LoRATargets: qv, LoRADropout: 0.1}, layerAct{lin: 4*(256+q) + 4*(256+kv) + 2*h}},
		// Prefix tuning, 256 virtual tokens over 1024 positions: the
		// keys and values kept by SDPA are a quarter longer (packed: no
		// K/V expansion).
		{"prefix", Job{PEFTVariant: "prefix-tuning", NumVirtualTokens: 256}, layerAct{lin: 2 * 2 * kv * 256.0 / 1024}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := tt.job
			job.Method = "lora"
			if got := peftLayerDelta(t, m, job); math.Abs(got.lin-tt.want.lin) > 1e-6 || got.quad != tt.want.quad || math.Abs(got.fixed-tt.want.fixed) > 1e-3 {
				t.Errorf("layer adds %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestPromptTuningTokens: prompt tuning and P-tuning run every layer and
// the logits over s + n positions with the input requiring grad; prefix
// tuning keeps s tokens and lengthens the keys (and the eager scores).
func TestPromptTuningTokens(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.2-3B")
	acts := func(job Job) (actTotals, setup) {
		var s setup
		if err := s.init(m, job); err != nil {
			t.Fatal(err)
		}
		return s.activations(), s
	}
	base := Job{Method: "lora", SeqLen: 768, MicroBatch: 4, Attention: "eager"}
	pt := base
	pt.PEFTVariant, pt.NumVirtualTokens = "prompt-tuning", 200
	a, s := acts(pt)
	if s.tokens != 4*968 || s.seqTotal != 968 {
		t.Errorf("prompt tuning: %v tokens, seq %d; want 4 × 968", s.tokens, s.seqTotal)
	}
	if s.inputNoGrad(0) || a.nrec != m.Text.Layers {
		t.Errorf("prompt tuning: layer 0 input without grad %v, %d recording layers; want the input to require grad in all %d", s.inputNoGrad(0), a.nrec, m.Text.Layers)
	}
	px := base
	px.PEFTVariant, px.NumVirtualTokens = "prefix-tuning", 200
	b, sp := acts(px)
	if sp.tokens != 4*768 || !sp.inputNoGrad(0) || b.nrec != m.Text.Layers {
		t.Errorf("prefix tuning: %v tokens, layer 0 no-grad %v, %d recording layers", sp.tokens, sp.inputNoGrad(0), b.nrec)
	}
	// Eager scores of s × (s + n) and a mask of the same shape.
	if want := 2 * 4 * 768.0 * 968; sp.maskBytes() != want {
		t.Errorf("prefix mask %.0f B, want %.0f", sp.maskBytes(), want)
	}
	fewer := px
	fewer.NumVirtualTokens = 10
	if c, _ := acts(fewer); c.fwd >= b.fwd {
		t.Errorf("10 virtual tokens keep %.0f B, 200 keep %.0f B: want fewer", c.fwd, b.fwd)
	}
}

// TestPEFTProperties checks rules that hold on every catalog model
// whose layers have a q_proj and a v_proj: one IA3 vector per module is
// fewer parameters than rank-1 LoRA on the same modules; LoHa has twice
// LoRA's parameters at the same rank and AdaLoRA r more per module; and
// every method's estimate is consistent.
func TestPEFTProperties(t *testing.T) {
	qv := []string{"q_proj", "v_proj"}
	checked := 0
	for _, e := range model.Catalog() {
		m := catalogModel(t, e.ID)
		if m.Text.Layers == 0 || !hasModule(m, "q_proj") || !hasModule(m, "v_proj") {
			continue
		}
		count := func(job Job) int64 {
			job.Method, job.SeqLen, job.AllowLong = "lora", 256, true
			r, err := Estimate(m, job)
			if err != nil {
				t.Fatalf("%s %s: %v", e.ID, job.PEFTVariant, err)
			}
			checkParts(t, r)
			return r.TrainableParams
		}
		lora1 := count(Job{LoRARank: 1, LoRATargets: qv})
		lora8 := count(Job{LoRARank: 8, LoRATargets: qv})
		ia3 := count(Job{PEFTVariant: "ia3", LoRATargets: qv, FeedforwardModules: []string{"v_proj"}})
		loha := count(Job{PEFTVariant: "loha", LoRARank: 8, LoRATargets: qv})
		ada := count(Job{PEFTVariant: "adalora", LoRARank: 8, LoRATargets: qv})
		modules := (ada - lora8) / 8
		if ia3 >= lora1 {
			t.Errorf("%s: IA3 %d trainable, not below rank-1 LoRA's %d", e.ID, ia3, lora1)
		}
		if loha != 2*lora8 {
			t.Errorf("%s: LoHa r8 %d, want twice LoRA r8 %d", e.ID, loha, lora8)
		}
		if modules <= 0 || (ada-lora8)%8 != 0 {
			t.Errorf("%s: AdaLoRA r8 %d vs LoRA r8 %d: want r (8) more per module", e.ID, ada, lora8)
		}
		for _, v := range []string{"lokr", "oft", "vera", "boft"} {
			job := Job{PEFTVariant: v, LoRATargets: qv}
			job.Method, job.SeqLen, job.AllowLong = "lora", 256, true
			if _, err := Estimate(m, job); err != nil && !strings.Contains(err.Error(), "boft") {
				t.Errorf("%s %s: %v", e.ID, v, err)
			}
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d catalog models, want at least 10", checked)
	}
}

// hasModule reports whether some module of m has the short name.
func hasModule(m *model.Model, short string) bool {
	for _, mod := range m.Modules {
		if lastElem(mod.Name) == short {
			return true
		}
	}
	return false
}

// TestAdaLoRAAllocatorState: AdaLoRA's RankAllocator keeps three
// zeros_like tensors per adapter parameter (ipt, exp_avg_ipt,
// exp_avg_unc) beside the optimizer's state.
func TestAdaLoRAAllocatorState(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.2-3B")
	job := Job{Method: "lora", PEFTVariant: "adalora", LoRARank: 64, LoRATargets: []string{"q_proj", "v_proj"}, SeqLen: 512, Optimizer: "adamw_torch"}
	r := estimateOK(t, m, job)
	n := float64(r.TrainableParams)
	want := n*4*2 + 3*n*4 // AdamW's two fp32 states + the allocator's three
	if got := float64(part(r, "optimizer_states")); got != want {
		t.Errorf("optimizer states %.0f B, want %.0f", got, want)
	}
}

// TestVeRAFrozenProjections: VeRA's shared vera_A (r × the widest
// input) and vera_B (the widest output × r) sit on the GPU once, fp32,
// without gradients.
func TestVeRAFrozenProjections(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.2-3B")
	job := Job{Method: "lora", PEFTVariant: "vera", LoRATargets: []string{"q_proj", "v_proj"}, SeqLen: 512}
	r := estimateOK(t, m, job)
	want := 4 * (float64(r.TrainableParams) + 256*(3072+3072))
	if got := float64(part(r, "adapter_weights")); got != want {
		t.Errorf("adapter weights %.0f B, want trainable + shared A/B = %.0f B", got, want)
	}
}

// TestPEFTBadInput: each refusal names the setting and what it wants.
func TestPEFTBadInput(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.2-3B")
	tests := []struct {
		job  Job
		want string
	}{
		{Job{Method: "lora", PEFTVariant: "prefix-tuning"}, "num_virtual_tokens"},
		{Job{Method: "lora", PEFTVariant: "oft", LoRARank: 8, OFTBlockSize: 16}, "oft_block_size=16"},
		{Job{Method: "lora", PEFTVariant: "boft", BOFTBlockSize: 4, BOFTBlockNum: 8}, "boft_block_size=4"},
		{Job{Method: "lora", PEFTVariant: "boft", BOFTBlockSize: 5}, "divisible by boft_block_size"},
		{Job{Method: "lora", PEFTVariant: "lokr", DecomposeFactor: -3}, "decompose_factor"},
		{Job{Method: "lora", PEFTVariant: "vera", NumVirtualTokens: -1}, "num_virtual_tokens"},
		{Job{Method: "qlora", PEFTVariant: "loha"}, "no bitsandbytes layer"},
		{Job{Method: "ia3", PEFTVariant: "vera"}, "disagrees"},
		{Job{Method: "lora", PEFTVariant: "ia3", Stack: Stack{"peft": "0.3.0"}}, "peft-no-ia3"},
		{Job{Method: "lora", PEFTVariant: "vera", Stack: Stack{"peft": "0.10.0"}}, "peft-no-boft-vera"},
		{Job{Method: "lora", PEFTVariant: "oft", Stack: Stack{"peft": "0.13.2"}}, "peft-oft-before-0.14"},
		{Job{Method: "lora", PEFTVariant: "hra"}, "peft_variant"},
	}
	for _, tt := range tests {
		tt.job.SeqLen = 512
		if _, err := Estimate(m, tt.job); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want an error containing %q", tt.job.PEFTVariant, err, tt.want)
		}
	}
	// IA3 without targets on a model type PEFT has no defaults for.
	phi3 := catalogModel(t, "microsoft/Phi-3-mini-4k-instruct")
	if _, err := Estimate(phi3, Job{Method: "lora", PEFTVariant: "ia3", SeqLen: 512}); err == nil || !strings.Contains(err.Error(), "lora_target_modules") {
		t.Errorf("IA3 on %s (%s) without targets: %v, want an error asking for lora_target_modules", phi3.ID, phi3.ModelType, err)
	}
}

// TestPEFTVariantSpellings: PEFT's peft_type names and the method's own
// name select the variant.
func TestPEFTVariantSpellings(t *testing.T) {
	for in, want := range map[string]string{
		"IA3": VariantIA3, "LOHA": VariantLoHa, "LOKR": VariantLoKr, "ADALORA": VariantAdaLoRA, "VERA": VariantVeRA,
		"PREFIX_TUNING": VariantPrefixTuning, "PROMPT_TUNING": VariantPromptTuning, "P_TUNING": VariantPTuning,
		"lora_fa": VariantLoRAFA, "": VariantLoRA, "QLoRA": VariantLoRA, "boft": VariantBOFT,
	} {
		if got, ok := parsePEFTVariant(in); !ok || got != want {
			t.Errorf("parsePEFTVariant(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	m := catalogModel(t, "meta-llama/Llama-3.2-3B")
	var s setup
	if err := s.init(m, Job{Method: "loha", SeqLen: 256}); err != nil {
		t.Fatal(err)
	}
	if s.method != MethodLoRA || s.lora.variant != VariantLoHa || s.lora.rank != 8 {
		t.Errorf("method loha: %s/%s rank %d, want lora/loha at PEFT's r 8", s.method, s.lora.variant, s.lora.rank)
	}
	if !strings.Contains(strings.Join(s.warnings, "\n"), "lora_rank not given") {
		t.Errorf("warnings %q should state the assumed rank", s.warnings)
	}
}

// ExamplePEFTVariants lists the PEFT methods a job may name.
func ExamplePEFTVariants() {
	fmt.Println(strings.Join(PEFTVariants(), " "))
	// Output: lora dora lora-fa adalora ia3 loha lokr oft boft vera prefix-tuning prompt-tuning p-tuning
}

// FuzzPEFTVariant feeds arbitrary method names and options through
// the estimator: an accepted name is a listed variant that parses to
// itself, and every job either fails with an error or gives a consistent
// result that trains something.
func FuzzPEFTVariant(f *testing.F) {
	for _, v := range peftVariants {
		f.Add(v, 8, 4, 0, 0, 0, 1, 0)
	}
	f.Add("PREFIX_TUNING", 0, 300, 0, 0, 0, 0, 0)
	f.Add("oft", 0, 0, 7, 0, 0, 0, 0)
	f.Add("boft", 0, 0, 0, 0, 3, 2, 0)
	f.Add("lokr", 3, 0, 0, 0, 0, 0, 1000)
	f.Add("ia3 ", -1, -1, -1, -1, -1, -1, -2)
	m, err := model.Lookup("HuggingFaceTB/SmolLM2-135M-Instruct")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v string, rank, tokens, oftBlock, boftSize, boftNum, factor, decompose int) {
		if got, ok := parsePEFTVariant(v); ok {
			if again, ok2 := parsePEFTVariant(got); !ok2 || again != got || !strings.Contains(strings.Join(peftVariants, " "), got) {
				t.Fatalf("parsePEFTVariant(%q) = %q, which parses to %q", v, got, again)
			}
		}
		clamp := func(n int) int { return max(min(n, 4096), -4) }
		job := Job{Method: "lora", PEFTVariant: v, LoRARank: clamp(rank), NumVirtualTokens: clamp(tokens), OFTBlockSize: clamp(oftBlock),
			BOFTBlockSize: clamp(boftSize), BOFTBlockNum: clamp(boftNum), BOFTButterflyFactor: clamp(factor), DecomposeFactor: clamp(decompose),
			SeqLen: 128, AllowLong: true}
		r, err := Estimate(m, job)
		if err != nil {
			return
		}
		if r.TrainableParams <= 0 {
			t.Fatalf("%+v trains %d parameters", job, r.TrainableParams)
		}
		checkParts(t, r)
	})
}
