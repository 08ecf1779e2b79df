package memory

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// phase returns the allocated total of a phase.
func phase(t *testing.T, r Result, name string) units.Bytes {
	t.Helper()
	for _, p := range r.PerGPU.Phases {
		if p.Name == name {
			return p.Bytes
		}
	}
	t.Fatalf("no phase %s", name)
	return 0
}

// lossPhaseRow estimates job and returns the named row's bytes when the
// loss phase is forced to be the peak by a fused optimizer.
func lossPhase(t *testing.T, id string, job Job) Result {
	t.Helper()
	if job.Optimizer == "" {
		job.Optimizer = "adamw_torch_fused"
	}
	return estimateOK(t, catalogModel(t, id), job)
}

func TestPartialTraining(t *testing.T) {
	const id = "meta-llama/Llama-2-7b-hf"
	m := catalogModel(t, id)
	full := estimateOK(t, m, Job{SeqLen: 2048, Optimizer: "adamw_torch_fused"})
	top := estimateOK(t, m, Job{SeqLen: 2048, Optimizer: "adamw_torch_fused", Trainable: []string{"top:4"}})
	if want := int64(4 * 202383360); top.TrainableParams != want {
		t.Errorf("top:4 trains %d params, want %d (4 layers)", top.TrainableParams, want)
	}
	if top.PerGPU.AllocatedPeakBytes >= full.PerGPU.AllocatedPeakBytes {
		t.Error("training the top 4 layers is not below full training")
	}
	// Layers below the lowest trainable one record nothing (MODEL.md §4.3.5).
	fwd := func(j Job) float64 {
		var s setup
		if err := s.init(m, j); err != nil {
			t.Fatal(err)
		}
		return s.activations().fwd
	}
	a, f := fwd(Job{SeqLen: 2048, Trainable: []string{"top:4"}}), fwd(Job{SeqLen: 2048})
	if r := a / f; r < 3.0/32 || r > 5.0/32 {
		t.Errorf("top:4 forward activations are %.3f of full training's, want ≈ 4/32", r)
	}
	head := estimateOK(t, m, Job{SeqLen: 2048, Trainable: []string{"lm_head"}})
	if head.TrainableParams != 131072000 || part(head, "activations") != 0 {
		t.Errorf("lm_head only: %d params, activations %d; want 131072000 and none in the layers", head.TrainableParams, part(head, "activations"))
	}
	byCount := estimateOK(t, m, Job{SeqLen: 2048, Method: "frozen", TrainableParams: 1_000_000})
	if byCount.TrainableParams != 1_000_000 || part(byCount, "activations") == 0 {
		t.Errorf("count only: %d params, activations %d", byCount.TrainableParams, part(byCount, "activations"))
	}
	rng := estimateOK(t, m, Job{SeqLen: 2048, Trainable: []string{"layers:28-31"}})
	if rng.TrainableParams != top.TrainableParams {
		t.Errorf("layers:28-31 trains %d, top:4 %d", rng.TrainableParams, top.TrainableParams)
	}
}

func TestVLMTraining(t *testing.T) {
	const id = "Qwen/Qwen2-VL-7B-Instruct"
	m := catalogModel(t, id)
	proj := estimateOK(t, m, Job{SeqLen: 1024, Trainable: []string{"projector"}, ImagesPerSample: 2})
	var want int64
	for _, mod := range m.Modules {
		if mod.Stack == "projector" || mod.Component == "projector" {
			want += mod.Params
		}
	}
	if proj.TrainableParams != want || want == 0 {
		t.Errorf("projector-only trains %d, want %d", proj.TrainableParams, want)
	}
	noImg := estimateOK(t, m, Job{SeqLen: 1024, Optimizer: "adamw_torch_fused"})
	img := estimateOK(t, m, Job{SeqLen: 1024, Optimizer: "adamw_torch_fused", ImagesPerSample: 2})
	if phase(t, img, PhaseForward) <= phase(t, noImg, PhaseForward) {
		t.Error("images did not add activations")
	}
	if part(img, "vision_activations") == 0 {
		t.Error("full VLM training without vision-tower activations")
	}
	big := estimateOK(t, m, Job{SeqLen: 1024, Optimizer: "adamw_torch_fused", ImagesPerSample: 2, ImageSize: 896})
	if phase(t, big, PhaseForward) <= phase(t, img, PhaseForward) {
		t.Error("larger images did not add activations")
	}
}

func TestActivationKnobsOrder(t *testing.T) {
	const id = "meta-llama/Llama-3.1-8B"
	base := Job{SeqLen: 4096, Attention: "flash", GradAccum: 2}
	with := func(f func(*Job)) Job { j := base; f(&j); return j }
	acts := func(j Job) units.Bytes { return part(lossPhase(t, id, j), "activations") }
	loss := func(j Job) units.Bytes {
		r := lossPhase(t, id, j)
		return phase(t, r, PhaseLoss) - phase(t, r, PhaseForward)
	}
	plain := acts(base)
	if c := acts(with(func(j *Job) { j.Compile = true })); c >= plain {
		t.Errorf("compile %d >= plain %d", c, plain)
	}
	if o := acts(with(func(j *Job) { j.ActivationOffload = true })); o >= plain/4 {
		t.Errorf("offload %d, want a few layers of %d", o, plain)
	}
	if e := acts(with(func(j *Job) { j.GradCheckpoint = "every-2" })); e >= plain || e <= acts(with(func(j *Job) { j.GradCheckpoint = "full" })) {
		t.Errorf("every-2 checkpointing %d not between full and none", e)
	}
	hf := loss(base)
	chunked := loss(with(func(j *Job) { j.FusedLoss = "chunked" }))
	compiled := loss(with(func(j *Job) { j.FusedLoss = "chunked-compiled" }))
	liger := loss(with(func(j *Job) { j.FusedLoss = "liger" }))
	if !(liger < compiled && compiled < chunked && chunked < hf) {
		t.Errorf("loss peaks liger %d < compiled %d < chunked %d < hf %d does not hold", liger, compiled, chunked, hf)
	}
}

func TestLoRAVariantsActivations(t *testing.T) {
	const id = "meta-llama/Llama-3.2-3B"
	base := Job{SeqLen: 768, MicroBatch: 4, Method: "lora", LoRARank: 32}
	acts := func(v string, drop float64) units.Bytes {
		j := base
		j.PEFTVariant, j.LoRADropout = v, drop
		return part(lossPhase(t, id, j), "activations")
	}
	lora, dora, fa := acts("lora", 0), acts("dora", 0), acts("lora-fa", 0)
	if !(fa < lora && lora < dora) {
		t.Errorf("activations lora-fa %d < lora %d < dora %d does not hold", fa, lora, dora)
	}
	if d := acts("lora", 0.1); d <= lora {
		t.Errorf("dropout 0.1 activations %d not above dropout 0 %d", d, lora)
	}
	// PEFT keeps bf16 adapters in fp32 (autocast_adapter_dtype); torchtune in bf16.
	hf := lossPhase(t, id, base)
	tt := base
	tt.Framework = "torchtune"
	tune := lossPhase(t, id, tt)
	if part(hf, "adapter_weights") != 2*part(tune, "adapter_weights") {
		t.Errorf("adapter weights hf %d, torchtune %d: want fp32 vs bf16", part(hf, "adapter_weights"), part(tune, "adapter_weights"))
	}
}

func TestQLoRARecipes(t *testing.T) {
	const id = "meta-llama/Llama-2-7b-hf"
	hf := lossPhase(t, id, Job{SeqLen: 1024, Method: "qlora"})
	dq := true
	tune := lossPhase(t, id, Job{SeqLen: 1024, Method: "qlora", Framework: "torchtune", DoubleQuant: &dq})
	lit := lossPhase(t, id, Job{SeqLen: 1024, Method: "qlora", Framework: "litgpt", DoubleQuant: &dq})
	// HF keeps non-quantized params in fp32 after prepare_model_for_kbit_training.
	if part(hf, "weights") <= part(tune, "weights") {
		t.Errorf("HF QLoRA weights %d not above torchtune's %d (fp32 embeddings, norms, head)", part(hf, "weights"), part(tune, "weights"))
	}
	// litgpt quantizes the head as well.
	if part(lit, "weights") >= part(tune, "weights") {
		t.Errorf("litgpt QLoRA weights %d not below torchtune's %d (4-bit lm_head)", part(lit, "weights"), part(tune, "weights"))
	}
	if part(hf, "dequant_workspace") == 0 {
		t.Error("QLoRA without a dequantization workspace")
	}
	old := lossPhase(t, id, Job{SeqLen: 1024, Method: "qlora", Software: []string{"bnb<0.43.2"}})
	if part(old, "activations") <= part(hf, "activations") {
		t.Error("bitsandbytes < 0.43.2 did not add the saved 4-bit inputs")
	}
	nodq := false
	a := lossPhase(t, id, Job{SeqLen: 1024, Method: "qlora", DoubleQuant: &dq})
	b := lossPhase(t, id, Job{SeqLen: 1024, Method: "qlora", DoubleQuant: &nodq})
	if d := float64(part(b, "weights") - part(a, "weights")); d < 0.27*float64(units.GiB) || d > 0.29*float64(units.GiB) {
		t.Errorf("double quantisation saves %.3f GiB, want ≈ 0.28 (MODEL.md §6.2: 0.377 − 0.096)", d/float64(units.GiB))
	}
}

func TestOtherArchitectures(t *testing.T) {
	tests := []struct {
		id   string
		job  Job
		rows []string
		not  []string
	}{
		{"google-bert/bert-large-uncased", Job{SeqLen: 512, MicroBatch: 4, Dtype: "fp32", ComputeDtype: "fp32", Attention: "eager", TaskHead: "sequence_classification", Optimizer: "adamw_torch_fused"},
			[]string{"activations"}, []string{"loss"}},
		{"google-t5/t5-base", Job{SeqLen: 512, MicroBatch: 8, Optimizer: "adamw_torch_fused"}, []string{"encoder_activations", "activations", "loss"}, nil},
		{"Qwen/Qwen3-30B-A3B", Job{SeqLen: 4096, Method: "lora", LoRATargets: []string{"all-linear"}, GradCheckpoint: "full"}, []string{"activations", "adapter_weights"}, nil},
		{"deepseek-ai/DeepSeek-V2-Lite", Job{SeqLen: 2048, Optimizer: "adamw_torch_fused", Attention: "flash"}, []string{"activations"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			r := estimateOK(t, catalogModel(t, tt.id), tt.job)
			checkParts(t, r)
			for _, name := range tt.rows {
				if part(r, name) == 0 {
					t.Errorf("%s missing at peak %s", name, r.PerGPU.PeakPhase)
				}
			}
			for _, name := range tt.not {
				if part(r, name) != 0 {
					t.Errorf("%s present", name)
				}
			}
		})
	}
	moe := estimateOK(t, catalogModel(t, "Qwen/Qwen3-30B-A3B"), Job{SeqLen: 512})
	if moe.ActiveParams >= moe.TotalParams || moe.ActiveParams < moe.TotalParams/20 {
		t.Errorf("MoE active params %d of %d", moe.ActiveParams, moe.TotalParams)
	}
}

func TestExplainFillsFormulas(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	plain := estimateOK(t, m, Job{SeqLen: 1024, Method: "lora"})
	ex := estimateOK(t, m, Job{SeqLen: 1024, Method: "lora", Explain: true})
	if len(plain.PerGPU.Components) != len(ex.PerGPU.Components) {
		t.Fatal("explain changed the rows")
	}
	for i, c := range ex.PerGPU.Components {
		if c.Bytes != plain.PerGPU.Components[i].Bytes {
			t.Errorf("explain changed %s", c.Name)
		}
		if c.Level == "allocated" && !strings.ContainsAny(c.Formula, "0123456789") {
			t.Errorf("%s formula %q has no inputs filled in", c.Name, c.Formula)
		}
	}
}

func FuzzTrainableSpec(f *testing.F) {
	for _, s := range []string{"top:4", "layers:3-9", "bottom:1", "projector", "layers.5", "mlp.*.down", "top:x", "layers:9-3", ""} {
		f.Add(s)
	}
	m, err := loadFuzzModel()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		r, err := Estimate(m, Job{SeqLen: 128, Trainable: []string{entry}})
		if err != nil {
			if m := marked(err); !strings.Contains(m, "<trainable") && !strings.Contains(m, "<method") {
				t.Errorf("error %q does not name the setting", m)
			}
			return
		}
		if r.TrainableParams < 0 || r.TrainableParams > r.TotalParams {
			t.Errorf("%q: %d trainable of %d", entry, r.TrainableParams, r.TotalParams)
		}
		checkParts(t, r)
	})
}

// loadFuzzModel is a small catalog model for fuzzing.
func loadFuzzModel() (*model.Model, error) {
	return model.Lookup("HuggingFaceTB/SmolLM2-135M-Instruct")
}

func TestLoRAModulesToSave(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	plain := estimateOK(t, m, Job{SeqLen: 1024, Method: "lora", LoRARank: 8})
	save := estimateOK(t, m, Job{SeqLen: 1024, Method: "lora", LoRARank: 8, Trainable: []string{"embed_tokens", "lm_head"}})
	if want := plain.TrainableParams + 2*131072000; save.TrainableParams != want {
		t.Errorf("modules_to_save trains %d, want %d", save.TrainableParams, want)
	}
	// The trainable copies (bf16) sit next to the adapters.
	if d := part(save, "adapter_weights") - part(plain, "adapter_weights"); d != 2*2*131072000 {
		t.Errorf("modules_to_save copies add %d B, want %d", d, 2*2*131072000)
	}
	if _, err := Estimate(m, Job{SeqLen: 1024, Method: "lora", Trainable: []string{"top:0"}}); err == nil {
		t.Error("bad modules_to_save entry accepted")
	}
}

func TestFrameworkLossDefaults(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.1-8B")
	lossOf := func(j Job) units.Bytes {
		j.SeqLen, j.MicroBatch, j.GradCheckpoint, j.Optimizer = 2048, 2, "full", "adamw_torch_fused"
		r := estimateOK(t, m, j)
		return phase(t, r, PhaseLoss) - phase(t, r, PhaseForward)
	}
	hf := lossOf(Job{})
	tune := lossOf(Job{Framework: "torchtune"})
	tuneCompiled := lossOf(Job{Framework: "torchtune", Compile: true})
	tunePlain := lossOf(Job{Framework: "torchtune", FusedLoss: "none"})
	if !(tuneCompiled < tune && tune < hf && tunePlain == hf) {
		t.Errorf("loss peaks: torchtune compiled %d < torchtune %d < hf %d, torchtune none %d == hf", tuneCompiled, tune, hf, tunePlain)
	}
}

func TestPagedStatesResidency(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	paged := func(gpu string, cc int, mem units.Bytes) (units.Bytes, Result) {
		r := estimateOK(t, m, Job{SeqLen: 1024, Optimizer: "paged_adamw_32bit", GPU: gpu, GPUComputeCapability: cc, GPUMemory: mem, GradCheckpoint: "full"})
		for _, c := range r.PerGPU.Components {
			if c.Name == "optimizer_states" && c.Level == "device" {
				return c.Bytes, r
			}
		}
		t.Fatal("no paged optimizer row")
		return 0, r
	}
	all, _ := paged("", 0, 0)
	if want := units.Bytes(8 * 6738415616); all != want {
		t.Errorf("paged states without a GPU limit %d, want %d", all, want)
	}
	// The facts a front end fills in for an A100 40GB from the catalog.
	const a100 = 40 * units.GiB
	some, r := paged("A100-SXM-40GB", 80, a100)
	if some >= all || r.PerGPU.DevicePeakBytes > a100 {
		t.Errorf("on a 40 GiB card paged states %d (of %d), device peak %d > %d", some, all, r.PerGPU.DevicePeakBytes, a100)
	}
	// A name without its facts sets no limit: every state is counted resident.
	if named, _ := paged("A100-SXM-40GB", 0, 0); named != all {
		t.Errorf("a GPU named without its memory: paged states %d, want all %d", named, all)
	}
	checkParts(t, r)
}

func TestSandwichNorms(t *testing.T) {
	m := catalogModel(t, "google/gemma-2-9b")
	var s setup
	if err := s.init(m, Job{SeqLen: 1024}); err != nil {
		t.Fatal(err)
	}
	if got := s.extraNorms(); got != 2 {
		t.Fatalf("Gemma 2 has %v extra norms per layer, want 2 (pre/post feed-forward)", got)
	}
	r := s.regime()
	with := decoderLayer(&m.Text, layerTypeAt(&m.Text, 0), &r)
	r.extraNorms = 0
	without := decoderLayer(&m.Text, layerTypeAt(&m.Text, 0), &r)
	h := float64(m.Text.Hidden)
	// Each extra norm keeps its fp32 input and, when its weight trains, the bf16 normalised tensor.
	if d := (with.lin - without.lin) / h; d != 2*(4+2) {
		t.Errorf("sandwich norms add %.1f·h per token, want 12", d)
	}
}

func TestGemma2SoftcapLoss(t *testing.T) {
	m := catalogModel(t, "google/gemma-2-2b")
	other := *m
	other.ModelType = "gemma"
	peak := func(mm *model.Model) float64 {
		var s setup
		if err := s.init(mm, Job{SeqLen: 1024}); err != nil {
			t.Fatal(err)
		}
		return s.lossMemory().peak
	}
	NV := 1024.0 * float64(m.Text.Vocab)
	if d := peak(m) - peak(&other); d != 2*NV {
		t.Errorf("soft-capping adds %.0f B, want 2·N·V = %.0f", d, 2*NV)
	}
}

// tinyFrozenJob is a pure-bf16 frozen/partial job on trainable names.
func tinyFrozenJob(framework string, trainable ...string) Job {
	return Job{Method: "frozen", Trainable: trainable, Framework: framework,
		Dtype: "bf16", MasterWeights: "none", SeqLen: 64, Optimizer: "adamw_torch"}
}

// TestFrozenFirstTrainableLayer pins what the lowest trainable layer of a
// frozen/partial job saves when its input (the frozen embedding's output)
// does not require grad, per token, on the 2-layer tiny models in bf16
// with a fused attention kernel (h = 64, 4 heads of 16, FFN f = 256).
// Autograd saves for an op only when one of its inputs requires grad,
// and a trainable Linear keeps its input for its weight gradient:
//
//   - HF Llama, whole layers: the input RMSNorm keeps no fp32 input copy
//     (4h) but keeps x̂ for its weight (2h) and its output for q/k/v
//     (2h); everything after it requires grad. 20h + 8f + 16 against the
//     24h + 8f + 16 of MODEL.md §4.3.1 above it (fp32 logsumexp 4 B × 4).
//   - GPT-NeoX, whole layers: F.layer_norm keeps its input for the
//     weight gradient, so the lowest layer saves what the others save.
//   - mlp.down_proj: nothing before the down projection requires grad;
//     it keeps its input 2f. Above, the frozen inventory of §4.3.5
//     (16h + 6f + 16) plus the down input 2f.
//   - input_layernorm (LN-tuning of the attention norm): x̂ 2h, then q,
//     k, v, the kernel output and logsumexp 8h + 16, the MLP norm's fp32
//     input 4h and the frozen MLP 6f. Above, + the fp32 input 4h.
//   - self_attn.o_proj: o keeps its input 2h (no kernel output is kept),
//     then the MLP norm's fp32 input 4h and the frozen MLP 6f. Above, the
//     frozen inventory: o's input is the kernel output it keeps anyway.
func TestFrozenFirstTrainableLayer(t *testing.T) {
	const h, f = 64.0, 256.0
	tests := []struct {
		name         string
		cfg          string
		job          Job
		first, above float64
	}{
		{"hf llama whole layers", tinyLlama, tinyFrozenJob("hf", "layers:0-1"), 20*h + 8*f + 16, 24*h + 8*f + 16},
		{"hf llama top layer", tinyLlama, tinyFrozenJob("hf", "top:1"), 20*h + 8*f + 16, 0},
		{"litgpt neox whole layers", tinyNeoX, tinyFrozenJob("litgpt", "layers:0-1"), 0, 0},
		{"hf llama down_proj", tinyLlama, tinyFrozenJob("hf", "mlp.down_proj"), 2 * f, 16*h + 8*f + 16},
		{"hf llama input norm", tinyLlama, tinyFrozenJob("hf", "input_layernorm"), 14*h + 6*f + 16, 18*h + 6*f + 16},
		{"hf llama o_proj", tinyLlama, tinyFrozenJob("hf", "self_attn.o_proj"), 6*h + 6*f, 16*h + 6*f + 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parseTiny(t, tt.cfg)
			var s setup
			if err := s.init(m, tt.job); err != nil {
				t.Fatal(err)
			}
			lo := s.trainable.lowest
			if !s.inputNoGrad(lo) {
				t.Fatalf("layer %d's input should not require grad", lo)
			}
			rg := s.regime()
			rg.trainW = s.trainable.lo <= lo && lo <= s.trainable.hi
			above := decoderLayer(&m.Text, layerTypeAt(&m.Text, lo), &rg)
			rg.noGradIn = true
			first := decoderLayer(&m.Text, layerTypeAt(&m.Text, lo), &rg)
			want := tt.first
			if want == 0 {
				want = above.lin // F.layer_norm keeps its input either way
			}
			if first.lin != want || first.quad != 0 {
				t.Errorf("lowest trainable layer saves %v B/token (+%v per key), want %v", first.lin, first.quad, want)
			}
			if tt.above > 0 && above.lin != tt.above {
				t.Errorf("layers above save %v B/token, want %v", above.lin, tt.above)
			}
			// The stack's total counts the lowest layer once.
			a := s.activations()
			wantSum := first.lin
			if lo == 0 {
				wantSum += above.lin
			}
			if a.perTok.lin != wantSum {
				t.Errorf("recording layers save %v B/token, want %v", a.perTok.lin, wantSum)
			}
		})
	}
}

// TestFrozenInputRequiresGrad lists the frozen jobs whose lowest
// trainable layer has an input that requires grad (or may have), so it
// keeps the full inventory of the layers above.
func TestFrozenInputRequiresGrad(t *testing.T) {
	tied := strings.Replace(tinyLlama, `"vocab_size"`, `"tie_word_embeddings": true, "vocab_size"`, 1)
	tests := []struct {
		name string
		cfg  string
		job  Job
		want bool // input does not require grad
	}{
		{"hf without checkpointing", tinyLlama, tinyFrozenJob("hf", "top:1"), true},
		{"hf checkpointing: enable_input_require_grads", tinyLlama, func() Job {
			j := tinyFrozenJob("hf", "top:1")
			j.GradCheckpoint = "full"
			return j
		}(), false},
		{"litgpt checkpointing", tinyLlama, func() Job {
			j := tinyFrozenJob("litgpt", "top:1")
			j.GradCheckpoint = "full"
			return j
		}(), true},
		{"trainable embedding", tinyLlama, tinyFrozenJob("hf", "embedding", "top:1"), false},
		{"tied lm_head trains the embedding", tied, tinyFrozenJob("hf", "lm_head", "top:1"), false},
		{"count only: modules unknown", tinyLlama, Job{Method: "frozen", TrainableParams: 1000, Dtype: "bf16", MasterWeights: "none", SeqLen: 64}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parseTiny(t, tt.cfg)
			var s setup
			if err := s.init(m, tt.job); err != nil {
				t.Fatal(err)
			}
			lo := s.trainable.lowest
			if got := s.inputNoGrad(lo); got != tt.want {
				t.Errorf("layer %d input without grad: %v, want %v", lo, got, tt.want)
			}
		})
	}
	// With HF checkpointing every layer of a frozen job keeps its
	// checkpoint and the recomputed layer in backward its full inventory.
	m := parseTiny(t, tinyLlama)
	ck := tinyFrozenJob("hf", "top:1")
	ck.GradCheckpoint = "full"
	var s setup
	if err := s.init(m, ck); err != nil {
		t.Fatal(err)
	}
	rg := s.regime()
	rg.trainW = true
	full := decoderLayer(&m.Text, layerTypeAt(&m.Text, 1), &rg)
	a := s.activations()
	if a.perTok.lin != full.lin || a.nckpt != 2 {
		t.Errorf("hf checkpointing: layer saves %v B/token with %d checkpoints, want %v with 2", a.perTok.lin, a.nckpt, full.lin)
	}
}

// TestLowestTrainableLayerSavesLess checks on catalog models of several
// layouts (RMSNorm and LayerNorm, parallel residual, sandwich norms, QK
// norms, MLA with MoE, fused qkv) that the lowest trainable layer, whose
// input does not require grad, never saves more than the same layer with
// an input that does, and saves something when a weight in it trains.
func TestLowestTrainableLayerSavesLess(t *testing.T) {
	ids := []string{"meta-llama/Llama-2-7b-hf", "EleutherAI/pythia-160m", "google/gemma-2-2b", "Qwen/Qwen3-0.6B",
		"deepseek-ai/DeepSeek-V2-Lite", "microsoft/Phi-3-mini-4k-instruct"}
	sets := [][]string{{"layers:0-1"}, {"top:2"}, {"norm"}, {"layers:1-1", "norm"}}
	for _, id := range ids {
		m := catalogModel(t, id)
		for _, set := range sets {
			for _, framework := range []string{"hf", "litgpt"} {
				job := Job{Method: "frozen", Trainable: set, Framework: framework, SeqLen: 256, AllowLong: true}
				var s setup
				if err := s.init(m, job); err != nil {
					t.Fatalf("%s %v: %v", id, set, err)
				}
				lo := s.trainable.lowest
				if !s.inputNoGrad(lo) {
					t.Errorf("%s %v %s: layer %d's input should not require grad", id, set, framework, lo)
					continue
				}
				rg := s.regime()
				rg.trainW = s.trainable.lo <= lo && lo <= s.trainable.hi
				above := decoderLayer(&m.Text, layerTypeAt(&m.Text, lo), &rg)
				rg.noGradIn = true
				first := decoderLayer(&m.Text, layerTypeAt(&m.Text, lo), &rg)
				if first.lin <= 0 || first.lin > above.lin || first.quad > above.quad {
					t.Errorf("%s %v %s: lowest trainable layer saves %v B/token, the same layer with a grad input %v", id, set, framework, first.lin, above.lin)
				}
			}
		}
	}
}
