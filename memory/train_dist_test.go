package memory

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/units"
)

// statesPerParam sums the model-state rows of a result per parameter.
func statesPerParam(r Result, P float64) float64 {
	var b units.Bytes
	for _, name := range []string{"weights", "master_weights", "optimizer_states"} {
		b += part(r, name)
	}
	return float64(b) / P
}

// TestZeROStages reproduces the ZeRO paper's model-state formulas
// (arXiv:1910.02054 §5; MODEL.md §3.1) for mixed-precision Adam on
// Llama-2-7B over 8 ranks: gradients are read at the step phase where
// they are all alive.
func TestZeROStages(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	P := 6738415616.0
	N := 8.0
	tests := []struct {
		zero int
		want float64 // bytes per parameter of weights + grads + master + Adam
	}{
		{0, 16},
		{1, 4 + 12/N},
		{2, 2 + 14/N},
		{3, 16 / N},
	}
	for _, tt := range tests {
		job := Job{SeqLen: 128, Engine: "deepspeed", ZeRO: tt.zero, NumGPUs: 8, GradAccum: 2, Optimizer: "adamw_torch_fused"}
		r := estimateOK(t, m, job)
		got := statesPerParam(r, P) + float64(part(r, "gradients"))/P
		if math.Abs(got-tt.want) > 0.01 {
			t.Errorf("ZeRO-%d: %.3f B/param of model states, want %.3f", tt.zero, got, tt.want)
		}
		checkParts(t, r)
	}
}

func TestParallelLayouts(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.1-70B")
	base := Job{SeqLen: 4096, MicroBatch: 1, GradCheckpoint: "full", Optimizer: "adamw_torch_fused", Engine: "fsdp2", NumGPUs: 64}
	one := estimateOK(t, m, base)
	checkParts(t, one)
	tp := base
	tp.TP = 8
	withTP := estimateOK(t, m, tp)
	checkParts(t, withTP)
	if withTP.TrainableParams != one.TrainableParams || one.TrainableParams != one.TotalParams {
		t.Errorf("trainable params %d with tp 8, %d without, total %d: want the whole model's count", withTP.TrainableParams, one.TrainableParams, one.TotalParams)
	}
	acts := func(j Job) actTotals {
		var s setup
		if err := s.init(m, j); err != nil {
			t.Fatal(err)
		}
		return s.activations()
	}
	a1, a8 := acts(base), acts(tp)
	if a8.layer*2 > a1.layer || a8.ckpt != a1.ckpt {
		t.Errorf("tp 8: recomputed layer %.0f vs %.0f (want < 1/2: replicated norms, the rest / 8), checkpoints %.0f vs %.0f (want equal without SP)", a8.layer, a1.layer, a8.ckpt, a1.ckpt)
	}
	sp := tp
	sp.SP = true
	if a := acts(sp); a.layer >= a8.layer {
		t.Error("sequence parallel did not shrink the layer")
	}
	cp := base
	cp.CP = 8
	c2 := estimateOK(t, m, cp)
	cp.Engine = "fsdp"
	c1 := estimateOK(t, m, cp)
	if part(c2, "optimizer_states") != part(one, "optimizer_states") || part(c1, "optimizer_states") <= part(c2, "optimizer_states") {
		t.Errorf("FSDP2 shards over dp × cp (%d, want %d), FSDP1 over dp only (%d)", part(c2, "optimizer_states"), part(one, "optimizer_states"), part(c1, "optimizer_states"))
	}
	// More GPUs never raise the per-GPU model states of full sharding.
	prev := units.MaxBytes
	for _, n := range []int{8, 16, 64, 256} {
		j := base
		j.NumGPUs = n
		r := estimateOK(t, m, j)
		st := part(r, "weights") + part(r, "optimizer_states") + part(r, "master_weights")
		if st > prev {
			t.Errorf("%d GPUs: model states %d above %d", n, st, prev)
		}
		prev = st
	}
}

func TestOffload(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	j := Job{SeqLen: 512, Engine: "deepspeed", ZeRO: 3, NumGPUs: 4, OffloadOptimizer: "cpu", OffloadParams: "cpu"}
	r := estimateOK(t, m, j)
	if r.Host == nil || r.Host.CPUBytes == 0 {
		t.Fatal("offload without host memory")
	}
	if part(r, "optimizer_states") != 0 || part(r, "weights") != 0 {
		t.Errorf("offloaded states still on the GPU: %d, %d", part(r, "optimizer_states"), part(r, "weights"))
	}
	checkParts(t, r)
	one := estimateOK(t, m, Job{SeqLen: 512, Engine: "deepspeed", ZeRO: 2, OffloadOptimizer: "cpu"})
	if one.Host == nil || part(one, "optimizer_states") != 0 {
		t.Error("single-GPU ZeRO-Offload kept the optimizer on the GPU")
	}
	plain := estimateOK(t, m, Job{SeqLen: 512, OffloadOptimizer: "cpu"})
	if plain.Host != nil || !strings.Contains(strings.Join(plain.Warnings, " "), "offload_optimizer") {
		t.Errorf("offload without an engine: host %v, warnings %q", plain.Host, plain.Warnings)
	}
}

func TestDistributedBadInput(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	tests := []struct {
		job  Job
		want string
	}{
		{Job{NumGPUs: 8, TP: 3}, "<num_gpus=8>"},
		{Job{NumGPUs: 6, TP: 3, DP: 2}, "<tp=3>"},
		{Job{Engine: "horovod"}, "<engine"},
		{Job{Engine: "deepspeed", ZeRO: 4}, "<zero"},
		{Job{Engine: "fsdp", FSDPStrategy: "half"}, "<fsdp_strategy"},
		{Job{PP: 64}, "<pp=64>"},
		{Job{EP: 2}, "<ep=2>"},
		{Job{Engine: "deepspeed", ZeRO: 2, OffloadParams: "cpu"}, "<offload_params"},
		{Job{NumGPUs: -1}, "<num_gpus"},
		{Job{Engine: "megatron", ZeRO: 2, NumGPUs: 2}, "<zero=2>"},
		{Job{Engine: "ddp", ZeRO: 1, NumGPUs: 2}, "<zero=1>"},
		{Job{Engine: "fsdp", ZeRO: 1, NumGPUs: 2}, "<fsdp_strategy"},
		{Job{Engine: "deepspeed", FSDPStrategy: "full_shard", NumGPUs: 2}, "<fsdp_strategy"},
		{Job{NumGPUs: 6, Nodes: 4}, "<nodes=4>"},
		{Job{NumGPUs: 2, OffloadOptimizer: "cpu"}, "engine ddp does not offload"},
		{Job{Engine: "deepspeed", NumGPUs: 2, OffloadOptimizer: "disk"}, "<offload_optimizer"},
		{Job{PP: 2, PipelineSchedule: "zigzag"}, "<pipeline_schedule"},
		{Job{PP: 2, PipelineSchedule: "interleaved"}, "<virtual_pipeline_stages"},
		{Job{PP: 2, VirtualStages: 2, PipelineSchedule: "gpipe"}, "<virtual_pipeline_stages=2>"},
		{Job{PP: 8, VirtualStages: 8}, "more model chunks"},
		{Job{TP: 64, NumGPUs: 64}, "num_attention_heads"},
		{Job{Engine: "deepspeed", ZeRO: 2, PP: 2}, "ZeRO stages 0 and 1"},
		{Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 2, ReduceBucketSize: -5}, "<reduce_bucket_size>: want a non-negative number of elements, got -5"},
		{Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 2, SubGroupSize: -1}, "sub_group_size"},
		{Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 2, MaxReuseDistance: new(int64(-1))}, "stage3_max_reuse_distance"},
		{Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 2, PrefetchBucketSize: new(int64(-1))}, "stage3_prefetch_bucket_size"},
		{Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 2, ParamPersistenceThreshold: new(int64(-1))}, "stage3_param_persistence_threshold"},
		{Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 2, MaxLiveParameters: new(int64(-1))}, "stage3_max_live_parameters"},
		{Job{Engine: "ddp", NumGPUs: 2, DDPBucketCapMB: math.NaN()}, "ddp_bucket_cap_mb"},
		{Job{Engine: "ddp", NumGPUs: 2, DDPBucketCapMB: -25}, "ddp_bucket_cap_mb"},
	}
	for _, tt := range tests {
		tt.job.SeqLen = 256
		if _, err := Estimate(m, tt.job); err == nil || !strings.Contains(marked(err), tt.want) {
			t.Errorf("%+v: err = %v, want one containing %q", tt.job, marked(err), tt.want)
		}
	}
}

func TestTPBeyondKVHeads(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.1-70B") // 64 heads, 8 KV heads
	_, err := Estimate(m, Job{SeqLen: 256, TP: 16, NumGPUs: 16})
	if err == nil || !strings.Contains(err.Error(), "num_key_value_heads") || !strings.Contains(marked(err), "<tp=16>") {
		t.Errorf("tp 16 over 8 KV heads: err = %v", err)
	}
	if _, err := Estimate(m, Job{SeqLen: 256, TP: 8, NumGPUs: 8}); err != nil {
		t.Errorf("tp 8: %v", err)
	}
}

// TestPipelineStages checks the per-stage figures of 1F1B (MODEL.md §4.7):
// stage i holds min(p − i, micro-batches) micro-batches of its L/p layers,
// the embedding sits on the first stage, the head and loss on the last,
// and the answer is the most loaded stage.
func TestPipelineStages(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.1-70B")
	job := Job{SeqLen: 4096, GradCheckpoint: "full", Optimizer: "adamw_torch_fused", Engine: "megatron", ZeRO: 1,
		NumGPUs: 64, TP: 8, PP: 4, GradAccum: 8, Framework: "megatron"}
	r := estimateOK(t, m, job)
	checkParts(t, r)
	if len(r.Stages) != 4 || r.Parallel == nil || r.Parallel.PP != 4 {
		t.Fatalf("stages %d, parallel %+v: want 4 stages", len(r.Stages), r.Parallel)
	}
	layers := 0
	var maxDevice int64
	for i, st := range r.Stages {
		layers += st.Layers
		if want := float64(min(4-i, 8)); st.InFlight != want {
			t.Errorf("stage %d: %.3g micro-batches in flight, want %.0f", i, st.InFlight, want)
		}
		if st.Embedding != (i == 0) || st.OutputLayer != (i == 3) {
			t.Errorf("stage %d: embedding %v, output layer %v", i, st.Embedding, st.OutputLayer)
		}
		// Only the last stage computes the logits and loss: its loss
		// phase is above its forward phase.
		if fwd, loss := st.PerGPU.Phases[0].Bytes, st.PerGPU.Phases[1].Bytes; (loss > fwd) != (i == 3) {
			t.Errorf("stage %d: loss phase %d B, forward %d B (only the last stage computes the loss)", i, loss, fwd)
		}
		maxDevice = max(maxDevice, int64(st.PerGPU.DevicePeakBytes))
	}
	if layers != 80 {
		t.Errorf("stages hold %d layers, want 80", layers)
	}
	if int64(r.PerGPU.DevicePeakBytes) != maxDevice || r.Stages[r.Parallel.PeakStage].PerGPU.DevicePeakBytes != r.PerGPU.DevicePeakBytes {
		t.Errorf("peak %d is not the most loaded stage's %d (peak stage %d)", r.PerGPU.DevicePeakBytes, maxDevice, r.Parallel.PeakStage)
	}
	// Stage 0 keeps L/p layers × p micro-batches of checkpoints: as many as
	// the whole model holds for one micro-batch without pipelining.
	fwd := func(j Job, stage int) float64 {
		var s setup
		if err := s.init(m, j); err != nil {
			t.Fatal(err)
		}
		s.setStage(stage)
		return s.activations().fwd
	}
	flat := job
	flat.PP, flat.NumGPUs = 1, 16
	if a, b := fwd(job, 0), fwd(flat, 0); math.Abs(a-b) > 1e-6*b {
		t.Errorf("stage 0 checkpoints %.0f B, want those of the unpipelined model %.0f B", a, b)
	}
	if a, b := fwd(job, 3), fwd(job, 0); math.Abs(a*4-b) > 1e-6*b {
		t.Errorf("last stage checkpoints %.0f B, want a quarter of stage 0's %.0f B", a, b)
	}
}

func TestPipelineSchedules(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.1-70B")
	inFlight := func(j Job, stage int) float64 {
		var s setup
		j.SeqLen = 1024
		if err := s.init(m, j); err != nil {
			t.Fatal(err)
		}
		s.setStage(stage)
		return s.dist.inFlight
	}
	p, v := 4.0, 2.0
	tests := []struct {
		name  string
		job   Job
		stage int
		want  float64
	}{
		// Korthikanti et al. §4.2.3: stage 0 of the interleaved schedule
		// holds p·(1 + (p−1)/(p·v)) micro-batches of its layers.
		{"interleaved stage 0", Job{PP: 4, VirtualStages: 2, GradAccum: 16}, 0, p * (1 + (p-1)/(p*v))},
		{"interleaved last stage", Job{PP: 4, VirtualStages: 2, GradAccum: 16}, 3, ((v-1)*p + 1) / v},
		{"1f1b fewer micro-batches than stages", Job{PP: 4, GradAccum: 2}, 0, 2},
		{"gpipe", Job{PP: 4, GradAccum: 16, PipelineSchedule: "gpipe"}, 2, 16},
	}
	for _, tt := range tests {
		if got := inFlight(tt.job, tt.stage); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: %.4g micro-batches in flight, want %.4g", tt.name, got, tt.want)
		}
	}
}

// TestMegatronImpliesItsFramework: --engine megatron without --framework
// runs Megatron-Core's layout: fp32 main_grad buffers (18 B/param without
// the distributed optimizer, Megatron-LM README), kept all step long.
func TestMegatronImpliesItsFramework(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	P := 6738415616.0
	r := estimateOK(t, m, Job{SeqLen: 256, Engine: "megatron", NumGPUs: 2, Optimizer: "adamw_torch_fused"})
	if got := float64(part(r, "gradients")) / P; math.Abs(got-4) > 0.01 {
		t.Errorf("gradients %.3f B/param, want Megatron's fp32 main_grad (4)", got)
	}
	if got := statesPerParam(r, P) + float64(part(r, "gradients"))/P; math.Abs(got-18) > 0.01 {
		t.Errorf("model states %.3f B/param, want 18", got)
	}
}

// TestZeRO3ReduceBucket pins ZeRO-3's reduce (IPG) bucket on the tiny
// 2-layer decoder over 2 ranks with DeepSpeed's own defaults. With
// contiguous_gradients the optimizer allocates reduce_bucket_size
// elements once and keeps them (stage3.py __ipg_bucket_flat_buffer), in
// every phase and whatever the trainable parameter count (about 0.2 M
// here, against 5e8), in the dtype the engine cast the parameters to;
// without it the bucket is the autograd gradients, in backward only and
// capped by the trainable parameters.
func TestZeRO3ReduceBucket(t *testing.T) {
	m := testModel(denseShape{id: "tiny", layers: 2, hidden: 64, heads: 4, kvHeads: 4, ffn: 128, vocab: 1000, maxPos: 512})
	const params = 2*(4*64*64+3*64*128+2*64) + 2*1000*64 + 64
	off := false
	all := func(v float64) [numPhases]float64 { return [numPhases]float64{v, v, v, v, v} }
	tests := []struct {
		name string
		job  Job
		want [numPhases]float64
	}{
		{"default bf16", Job{}, all(5e8 * 2)},
		{"reduce_bucket_size 5000", Job{ReduceBucketSize: 5000}, all(5000 * 2)},
		{"fp32", Job{Dtype: "fp32", ComputeDtype: "fp32"}, all(5e8 * 4)},
		{"LoRA: not capped by the adapters", Job{Method: "lora", LoRATargets: []string{"all-linear"}}, all(5e8 * 2)},
		{"QLoRA: the compute dtype, not nf4", Job{Method: "qlora", LoRATargets: []string{"all-linear"}}, all(5e8 * 2)},
		{"optimizer offloaded: the bucket stays on the GPU", Job{OffloadOptimizer: "cpu"}, all(5e8 * 2)},
		{"no contiguous_gradients", Job{ContiguousGradients: &off}, [numPhases]float64{0, 0, params * 2, params * 2, 0}},
		{"no contiguous_gradients, bucket 5000", Job{ContiguousGradients: &off, ReduceBucketSize: 5000},
			[numPhases]float64{0, 0, 5000 * 2, 5000 * 2, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := tt.job
			job.Engine, job.ZeRO, job.NumGPUs, job.SeqLen, job.Framework = "deepspeed", 3, 2, 16, "deepspeed"
			var s setup
			if err := s.init(m, job); err != nil {
				t.Fatal(err)
			}
			var tp trainParts
			s.stageParts(&tp)
			k := s.deepspeedKnobs()
			if got := s.zero3ReduceBucket(&k, &tp.p); got != tt.want {
				t.Errorf("bucket %v, want %v", got, tt.want)
			}
			// The comm_buffers row carries it: at the step, where nothing
			// is gathered, it is the persistent parameters plus the bucket.
			persist := s.persistentParams(k.persist) * s.compute.BytesPerElement()
			if got := s.deepspeedBuffers(&tp.st, &tp.p)[phStep]; got != persist+tt.want[phStep] {
				t.Errorf("comm buffers at the step %v, want persistent %v + bucket %v", got, persist, tt.want[phStep])
			}
		})
	}
}

// TestZeRO3GradientsPersist: ZeRO-3's gradient partitions are one flat
// buffer allocated with the optimizer and never freed (stage3.py
// grad_partitions_flat_buffer), so the gradients row is the same in
// every phase even without gradient accumulation; ZeRO-2's gradients
// still appear during backward.
func TestZeRO3GradientsPersist(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	for _, zero := range []int{2, 3} {
		var s setup
		if err := s.init(m, Job{Engine: "deepspeed", ZeRO: zero, NumGPUs: 8, SeqLen: 512, Optimizer: "adamw_torch_fused"}); err != nil {
			t.Fatal(err)
		}
		var tp trainParts
		s.stageParts(&tp)
		g := s.gradPhases(&tp)
		if tp.st.grads <= 0 {
			t.Fatalf("ZeRO-%d: no gradients", zero)
		}
		if persist := g == allPhases(tp.st.grads); persist != (zero == 3) {
			t.Errorf("ZeRO-%d: gradients by phase %v (sharded total %v): persistent %v, want %v", zero, g, tp.st.grads, persist, zero == 3)
		}
	}
}

// show prints an optional size: its value, or "default".
func show(n *int64) string {
	if n == nil {
		return "default"
	}
	return strconv.FormatInt(*n, 10)
}

// TestZeRO3MaxReuseDistance: stage3_max_reuse_distance decides which of
// a checkpointed Llama-2-70B layer's Linears stay gathered from the
// recomputation into their backward (partitioned_param_coordinator.py
// __params_to_release): Linear j is met again after twice the elements
// of the Linears after it (q, k, v, o: 67.1 M, 8.4 M, 8.4 M, 67.1 M;
// gate, up, down: 234.9 M each). A smaller distance never raises the
// estimate; a distance of 0 keeps nothing.
func TestZeRO3MaxReuseDistance(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-70b-hf")
	const big, attn = 234881024.0, 2*67108864.0 + 2*8388608.0
	tests := []struct {
		dist *int64 // nil: the default
		want float64
	}{
		{new(int64(0)), 0},              // nothing is kept
		{new(int64(1)), big},            // down only: it is met again at once
		{new(int64(5e8)), 2 * big},      // up after 2 × 234.9 M
		{nil, 3 * big},                  // the default, 1e9: gate after 2 × 469.8 M
		{new(int64(1e9)), 3 * big},      // the same, given
		{new(int64(14e8)), 3 * big},     // o after 2 × 704.6 M = 1409 M: not yet
		{new(int64(2e9)), 3*big + attn}, // the whole layer
	}
	// Distances 0, 1, 5e8, 1e9 (the default) in turn: the estimate of a
	// LoRA run that peaks in backward (the PEFT docs' ZeRO-3 example)
	// grows.
	var prev units.Bytes
	for i, tt := range tests[:4] {
		j := Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, SeqLen: 2048, MicroBatch: 8, GradCheckpoint: "full", Attention: "flash",
			Method: "lora", LoRATargets: []string{"all-linear"}, MaxReuseDistance: tt.dist}
		a := estimateOK(t, m, j).PerGPU.AllocatedPeakBytes
		// Keeping down_proj alone (distance 1 after 0) may stay within
		// the gathered working set; keeping more raises the peak.
		if i > 0 && (a < prev || (i > 1 && a == prev)) {
			t.Errorf("reuse distance %v: allocated %.2f GiB, not above %.2f GiB at the smaller distance", show(tt.dist), gib(a), gib(prev))
		}
		prev = a
	}
	for _, tt := range tests {
		var s setup
		if err := s.init(m, Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, SeqLen: 512, GradCheckpoint: "full", MaxReuseDistance: tt.dist}); err != nil {
			t.Fatal(err)
		}
		if got := s.zero3KeptForReuse(); got != tt.want {
			t.Errorf("stage3_max_reuse_distance %v: kept %v parameters, want %v", show(tt.dist), got, tt.want)
		}
	}
}

// TestZeRO3KnobsAtZero checks that the ZeRO-3 knobs for which 0 is a
// setting of its own take it: no prefetching, no persistent parameters
// or no live-parameter room each lower the device peak of a full
// fine-tuning run below the defaults', where 0 meaning "default" would
// leave it unchanged.
func TestZeRO3KnobsAtZero(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-70b-hf")
	base := Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, SeqLen: 2048, GradCheckpoint: "full", Attention: "flash"}
	def := estimateOK(t, m, base).PerGPU.DevicePeakBytes
	zero := new(int64(0))
	for name, set := range map[string]func(*Job){
		"stage3_prefetch_bucket_size":        func(j *Job) { j.PrefetchBucketSize = zero },
		"stage3_param_persistence_threshold": func(j *Job) { j.ParamPersistenceThreshold = zero },
		"stage3_max_live_parameters":         func(j *Job) { j.MaxLiveParameters = zero },
	} {
		j := base
		set(&j)
		if got := estimateOK(t, m, j).PerGPU.DevicePeakBytes; got >= def {
			t.Errorf("%s 0: device peak %d, want below the default's %d", name, got, def)
		}
	}
}
