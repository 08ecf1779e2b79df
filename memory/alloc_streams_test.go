package memory

import (
	"math"
	"testing"

	"github.com/gpumem/gpumem/units"
)

func TestGatherPool(t *testing.T) {
	tests := []struct {
		name        string
		unit, root  float64
		fsdp2       bool
		want        float64
		explanation string
	}{
		{"fsdp2 root larger", 3, 5, true, 8, "root block, then one unit block; the root's serves every other unit"},
		{"fsdp2 root equal", 4, 4, true, 8, "a root block that fits a unit exactly is reused"},
		{"fsdp2 root smaller", 5, 3, true, 13, "the root's block fits no unit: two unit blocks"},
		{"fsdp2 no root", 5, 0, true, 10, "a stage without embedding and head: two unit blocks"},
		{"fsdp1", 3, 5, false, 11, "the root stays gathered: two unit blocks beside it"},
	}
	for _, tt := range tests {
		if got := gatherPool(tt.unit, tt.root, tt.fsdp2); got != tt.want {
			t.Errorf("%s: gatherPool(%v, %v) = %v, want %v (%s)", tt.name, tt.unit, tt.root, got, tt.want, tt.explanation)
		}
	}
}

func TestReduceInputs(t *testing.T) {
	tests := []struct{ unit, root, want float64 }{
		{4, 10, 14}, // the root's input needs its own block
		{10, 4, 10}, // the root's input is carved from the unit block
		{10, 10, 10},
		{10, 0, 10},
	}
	for _, tt := range tests {
		if got := reduceInputs(tt.unit, tt.root); got != tt.want {
			t.Errorf("reduceInputs(%v, %v) = %v, want %v", tt.unit, tt.root, got, tt.want)
		}
	}
}

// tinyFSDP2 is a 2-layer decoder (hidden 64, FFN 128, vocabulary 1000,
// untied head) trained in bf16 with FSDP2 over 2 ranks: small enough to
// count its pools by hand.
func tinyFSDP2(t *testing.T) (*setup, *trainParts) {
	t.Helper()
	m := testModel(denseShape{id: "tiny", layers: 2, hidden: 64, heads: 4, kvHeads: 4, ffn: 128, vocab: 1000, maxPos: 512})
	var s setup
	if err := s.init(m, Job{Engine: "fsdp2", NumGPUs: 2, SeqLen: 16, Optimizer: "adamw_torch"}); err != nil {
		t.Fatal(err)
	}
	var tp trainParts
	s.stageParts(&tp)
	return &s, &tp
}

func TestFSDPPoolsHandComputed(t *testing.T) {
	s, tp := tinyFSDP2(t)
	// One layer: q, k, v, o 64×64, gate, up, down 64×128, two norms of 64.
	const unit = 4*64*64 + 3*64*128 + 2*64 // 41088
	// Root: embedding and head 1000×64 each, final norm 64.
	const root = 2*1000*64 + 64 // 128064
	if u, r := s.fsdpUnits(false); u != unit || r != root {
		t.Fatalf("units %v, %v; want %v, %v", u, r, unit, root)
	}
	p, ok := s.fsdpPools(tp)
	if !ok {
		t.Fatal("no pools for an FSDP2 job")
	}
	// bf16 all-gather outputs: root ≥ unit, so root + unit blocks.
	if want := (root + unit) * 2.0; p.gather != want {
		t.Errorf("gather pool %v, want %v", p.gather, want)
	}
	// bf16 sharded gradients of all 2·41088 + 128064 parameters over 2
	// ranks, plus the bf16 reduce-scatter inputs of a unit and of the
	// (larger) root.
	grads := (2*unit + root) / 2 * 2.0
	if want := grads + unit*2 + root*2; p.reduce != want {
		t.Errorf("reduce pool %v, want %v", p.reduce, want)
	}
	// Forward: the prefetched all-gather output only (no gradients yet).
	if want := unit * 2.0; p.live[phForward] != want {
		t.Errorf("live in forward %v, want %v", p.live[phForward], want)
	}
	// Backward of the top layer: the prefetched output, the head's and
	// final norm's sharded gradients, one unit's reduce-scatter input.
	if want := unit*2.0 + (1000*64+64)/2*2 + unit*2; p.live[phBackward] != want {
		t.Errorf("live in backward %v, want %v", p.live[phBackward], want)
	}
	// Step: every sharded gradient, no collective buffer.
	if p.live[phStep] != grads {
		t.Errorf("live at the step %v, want %v", p.live[phStep], grads)
	}
	// The cache is the compute stream's largest phase plus the pools,
	// less the allocated peak; the result's phase totals give both.
	cache, _, _ := s.streamCache(tp)
	r := estimateOK(t, s.m, *s.job)
	var peak, compute float64
	for i, ph := range r.PerGPU.Phases {
		peak = max(peak, float64(ph.Bytes))
		compute = max(compute, float64(ph.Bytes)-p.live[i])
	}
	if want := compute + p.gather + p.reduce - peak; math.Abs(cache-want) > 8 {
		t.Errorf("stream cache %v, want %v", cache, want)
	}
	if cache <= 0 || cache > p.gather+p.reduce {
		t.Errorf("stream cache %v outside (0, pools %v]", cache, p.gather+p.reduce)
	}
}

func TestFSDPPoolsEngines(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	tests := []struct {
		name           string
		job            Job
		pools, gather  bool
		reduceAtMostMB float64 // 0: no bound
	}{
		{"single GPU", Job{SeqLen: 512}, false, false, 0},
		{"ddp", Job{Engine: "ddp", NumGPUs: 8, SeqLen: 512}, false, false, 0},
		{"deepspeed zero-3", Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, SeqLen: 512}, false, false, 0}, // zero3Pools
		{"fsdp no_shard", Job{Engine: "fsdp", FSDPStrategy: "no_shard", NumGPUs: 8, SeqLen: 512}, false, false, 0},
		{"fsdp full_shard", Job{Engine: "fsdp", NumGPUs: 8, SeqLen: 512}, true, true, 0},
		{"fsdp hybrid_shard", Job{Engine: "fsdp", FSDPStrategy: "hybrid_shard", NumGPUs: 16, Nodes: 2, SeqLen: 512}, true, true, 0},
		{"fsdp shard_grad_op", Job{Engine: "fsdp", FSDPStrategy: "shard_grad_op", NumGPUs: 8, SeqLen: 512}, true, false, 0},
		// LoRA r=8 on q,v: 4.2 M adapter parameters; only they reduce-scatter.
		{"fsdp lora", Job{Engine: "fsdp", NumGPUs: 8, SeqLen: 512, Method: "lora", LoRARank: 8}, true, true, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s setup
			if err := s.init(m, tt.job); err != nil {
				t.Fatal(err)
			}
			var tp trainParts
			s.stageParts(&tp)
			p, ok := s.fsdpPools(&tp)
			if ok != tt.pools {
				t.Fatalf("pools %v, want %v", ok, tt.pools)
			}
			if (p.gather > 0) != tt.gather {
				t.Errorf("gather pool %v, want present=%v", p.gather, tt.gather)
			}
			if tt.pools && p.reduce <= 0 {
				t.Errorf("reduce pool %v, want > 0", p.reduce)
			}
			if tt.reduceAtMostMB > 0 && p.reduce > tt.reduceAtMostMB*(1<<20) {
				t.Errorf("reduce pool %.1f MiB, want at most %v MiB", p.reduce/(1<<20), tt.reduceAtMostMB)
			}
			o := s.trainOverheads(&tp)
			_, zero3 := s.zero3Pools(&tp)
			if (o.StreamCache > 0) != (tt.pools || zero3) {
				t.Errorf("stream cache %d, want present=%v", o.StreamCache, tt.pools || zero3)
			}
			for ph, l := range p.live {
				if l < 0 || l > p.gather+p.reduce {
					t.Errorf("phase %d: live %v outside [0, pools]", ph, l)
				}
			}
		})
	}
}

// titanJob is a torchtitan Llama-2-7B-shaped run of pytorch/torchtitan
// PR #165's numeric-parity table: 8 H100s, local batch 8, sequence 2048,
// bf16 parameters over fp32 shards, fp32 reduce-scatter.
func titanJob(engine, ckpt string, compile bool) Job {
	packed := true
	return Job{Dtype: "bf16", MasterWeights: "fp32", Optimizer: "adamw_torch", Attention: "sdpa",
		Framework: FrameworkTorchtitan, Engine: engine, NumGPUs: 8, ZeRO: 3, SeqLen: 2048, MicroBatch: 8,
		Packed: &packed, GradCheckpoint: ckpt, Compile: compile, Software: []string{"torchtitan-2024q1"},
		GPU: "H100", GPUComputeCapability: 90, GPUMemory: units.FromFloat(95.0396 * (1 << 30))}
}

// TestFSDPMasterGradients: FSDP's sharded gradients take the fp32 dtype
// of the sharded parameters, and the step needs no fp32 gradient copy.
func TestFSDPMasterGradients(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	const P, nd = 6738415616.0, 8.0
	var s setup
	if err := s.init(m, titanJob("fsdp2", "full", false)); err != nil {
		t.Fatal(err)
	}
	var tp trainParts
	s.stageParts(&tp)
	if want := 4 * P / nd; math.Abs(tp.st.grads-want) > 1 {
		t.Errorf("sharded gradients %.0f B, want 4 B × %v / %v = %.0f", tp.st.grads, P, nd, want)
	}
	// foreach AdamW: one fp32 parameter-sized list (the shard), nothing more.
	if want := 4 * P / nd; math.Abs(tp.st.optim.transient-want) > 1 {
		t.Errorf("step transient %.0f B, want %.0f", tp.st.optim.transient, want)
	}
}

// TestTorchtitanStreamCache applies the stream pools to the torchtitan
// PR #165 runs with full checkpointing, whose reserved peaks were logged
// with their active peaks: reserved − active was 8.3-8.6 GiB eager, where
// allocated × fragmentation_sharded gives 3.4 GiB. The pools bring the
// reserved estimate to within the multi-GPU target on the FSDP2 rows;
// FSDP1 keeps ≈ 2.8 GiB unexplained (MODEL.md §10).
func TestTorchtitanStreamCache(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	tests := []struct {
		name            string
		job             Job
		measuredGiB     float64 // logged peak reserved
		loPct, hiPct    float64
		poolsGiBAtLeast float64
	}{
		{"fsdp2 ac", titanJob("fsdp2", "full", false), 31.02, -5, 0, 5},
		{"fsdp2 ac compile", titanJob("fsdp2", "full", true), 28.90, 0, 5, 5},
		{"fsdp1 ac", titanJob("fsdp", "full", false), 32.14, -10, -5, 4.5},
		// No checkpointing: activations dominate; the pools keep the
		// estimate below the GPU's capacity.
		{"fsdp2 no ac compile", titanJob("fsdp2", "none", true), 90.28, 0, 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s setup
			if err := s.init(m, tt.job); err != nil {
				t.Fatal(err)
			}
			var tp trainParts
			s.stageParts(&tp)
			o := s.trainOverheads(&tp)
			if o.FragmentationName != "fragmentation" {
				t.Errorf("compute-stream fragmentation %q, want the training constant", o.FragmentationName)
			}
			if got := float64(o.StreamCache) / (1 << 30); got < tt.poolsGiBAtLeast {
				t.Errorf("stream cache %.2f GiB, want at least %v", got, tt.poolsGiBAtLeast)
			}
			r := estimateOK(t, m, tt.job)
			res := float64(o.Reserved(r.PerGPU.AllocatedPeakBytes)) / (1 << 30)
			if e := 100 * (res - tt.measuredGiB) / tt.measuredGiB; e < tt.loPct || e > tt.hiPct {
				t.Errorf("reserved %.2f GiB vs logged %.2f GiB: %+.1f %%, want within [%v, %v] %%", res, tt.measuredGiB, e, tt.loPct, tt.hiPct)
			}
		})
	}
}

// TestZeRO3Pools pins DeepSpeed ZeRO-3's stream pools on the tiny
// 2-layer decoder (hidden 64, FFN 128, vocabulary 1000, untied head) in
// bf16 over 2 ranks with DeepSpeed's own bucket sizes: the gathered
// working set is the largest module (the 1000×64 embedding or head)
// plus the prefetch bucket of 5e7 parameters (below the 1e9 of
// stage3_max_live_parameters), in bf16; the reduce pool is one flat reduce-scatter copy of a bucket, here every
// trainable parameter (2·41088 + 128064 < reduce_bucket_size 5e8) in
// bf16. Without overlap_comm both run on the compute stream: no pools,
// and fragmentation_sharded stays.
func TestZeRO3Pools(t *testing.T) {
	m := testModel(denseShape{id: "tiny", layers: 2, hidden: 64, heads: 4, kvHeads: 4, ffn: 128, vocab: 1000, maxPos: 512})
	const params = 2*(4*64*64+3*64*128+2*64) + 2*1000*64 + 64
	off := false
	tests := []struct {
		name           string
		job            Job
		gather, reduce float64
		frag           string
	}{
		{"overlap_comm (default)", Job{}, (64000 + 5e7) * 2, params * 2, "fragmentation"},
		{"prefetch 1000", Job{PrefetchBucketSize: new(int64(1000))}, (64000 + 1000) * 2, params * 2, "fragmentation"},
		{"reduce bucket 5000", Job{ReduceBucketSize: 5000}, (64000 + 5e7) * 2, 5000 * 2, "fragmentation"},
		{"max live 1e6", Job{MaxLiveParameters: new(int64(1e6))}, 1e6 * 2, params * 2, "fragmentation"},
		{"no overlap_comm", Job{OverlapComm: &off}, 0, 0, "fragmentation_sharded"},
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
			p, ok := s.zero3Pools(&tp)
			if ok != (tt.gather > 0) {
				t.Fatalf("pools %v, want %v", ok, tt.gather > 0)
			}
			if p.gather != tt.gather || p.reduce != tt.reduce {
				t.Errorf("pools gather %v reduce %v, want %v and %v", p.gather, p.reduce, tt.gather, tt.reduce)
			}
			// The gathered parameters are allocated from forward to the
			// end of backward, not at the step; the reduce copy never.
			for ph, l := range p.live {
				if want := tt.gather; (ph == phStep && l != 0) || (ph != phStep && l != want) {
					t.Errorf("phase %d: live %v", ph, l)
				}
			}
			o := s.trainOverheads(&tp)
			if o.FragmentationName != tt.frag {
				t.Errorf("fragmentation %s, want %s", o.FragmentationName, tt.frag)
			}
			if ok && (o.StreamCache <= 0 || float64(o.StreamCache) > p.gather+p.reduce+1) {
				t.Errorf("stream cache %d outside (0, pools %v]", o.StreamCache, p.gather+p.reduce)
			}
		})
	}
}

// TestZeRO3KeptForReuse pins the parameters ZeRO-3 keeps gathered from a
// checkpointed layer's recomputation into its backward, with the
// default stage3_max_reuse_distance of 1e9 elements. Llama-2-70B's layer
// runs q, k, v, o (67.1 M, 8.4 M, 8.4 M, 67.1 M) then gate, up, down
// (234.9 M each): down is met again at once, up after 2 × 234.9 M, gate
// after 2 × 469.8 M, all below 1e9; o only after 2 × 704.6 M. A 7B layer
// (202 M) is kept whole. The backward working set adds the HF "auto"
// prefetch bucket (0.9·h²) the live-parameter cap still allows.
func TestZeRO3KeptForReuse(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ckpt string
		want float64
	}{
		{"70B checkpointed", "meta-llama/Llama-2-70b-hf", "full", 3 * 234881024},
		{"70B without checkpointing", "meta-llama/Llama-2-70b-hf", "", 0},
		{"7B checkpointed", "meta-llama/Llama-2-7b-hf", "full", 4*4096*4096 + 3*4096*11008},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := catalogModel(t, tt.id)
			var s setup
			if err := s.init(m, Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 8, SeqLen: 512, GradCheckpoint: tt.ckpt}); err != nil {
				t.Fatal(err)
			}
			if got := s.zero3KeptForReuse(); got != tt.want {
				t.Errorf("kept %v parameters, want %v", got, tt.want)
			}
			k := s.deepspeedKnobs()
			h := float64(m.Text.Hidden)
			want := s.zero3Gathered(&k)
			if tt.want > 0 {
				want = max(want, (tt.want+0.9*h*h)*2)
			}
			if got := s.zero3GatheredBackward(&k); got != want {
				t.Errorf("backward working set %v B, want %v", got, want)
			}
		})
	}
}
