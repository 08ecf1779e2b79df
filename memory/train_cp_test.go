package memory

import (
	"strings"
	"testing"
)

// TestTorchtitanContextParallelSharding: torchtitan shards the model
// states with FSDP2 over the flattened dp_shard × cp mesh
// (torchtitan/distributed/parallel_dims.py @b5bcd76: fsdp = dp_shard * cp),
// whatever the job calls its engine, so a 262k-token run on 8 GPUs with
// cp 8 holds 1/8 of the model states per rank — as many as dp 8 —
// instead of the whole model that sharding over dp = 1 gives.
func TestTorchtitanContextParallelSharding(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.1-8B")
	base := Job{Framework: FrameworkTorchtitan, NumGPUs: 8, DP: 1, CP: 8, SeqLen: 262144, MicroBatch: 1,
		GradCheckpoint: "full", MasterWeights: "fp32", Optimizer: "adamw_torch", AllowLong: true}
	dp8 := base
	dp8.DP, dp8.CP, dp8.SeqLen = 8, 1, 32768
	ref := estimateOK(t, m, dp8)
	if ref.Parallel == nil || ref.Parallel.Engine != EngineFSDP2 || ref.Parallel.ShardGroup != 8 {
		t.Fatalf("torchtitan dp 8 without an engine: %+v, want fsdp2 sharded 8 ways (data_parallel_shard_degree -1)", ref.Parallel)
	}
	for _, engine := range []string{"", "fsdp", "fsdp2", "torchtitan-fsdp2"} {
		job := base
		job.Engine = engine
		r := estimateOK(t, m, job)
		if r.Parallel.Engine != EngineFSDP2 || r.Parallel.ShardGroup != 8 {
			t.Errorf("engine %q: %s sharded %d ways, want fsdp2 over dp_shard × cp = 8", engine, r.Parallel.Engine, r.Parallel.ShardGroup)
		}
		for _, name := range []string{"weights", "optimizer_states"} {
			if got, want := part(r, name), part(ref, name); got != want {
				t.Errorf("engine %q: %s %d B, want %d B as with dp 8", engine, name, got, want)
			}
		}
		warned := strings.Contains(strings.Join(r.Warnings, "\n"), "estimated as fsdp2")
		if warned != (engine == "fsdp") {
			t.Errorf("engine %q: warning about reading fsdp as fsdp2 = %v, want %v (%q)", engine, warned, engine == "fsdp", r.Warnings)
		}
	}
	// Outside torchtitan FSDP1 keeps sharding over its data-parallel
	// group: context-parallel ranks hold replicas.
	plain := base
	plain.Framework, plain.Engine = FrameworkHF, "fsdp"
	r := estimateOK(t, m, plain)
	if r.Parallel.Engine != EngineFSDP || r.Parallel.ShardGroup != 1 {
		t.Errorf("HF FSDP1 with cp 8: %s sharded %d ways, want fsdp over dp 1", r.Parallel.Engine, r.Parallel.ShardGroup)
	}
}

// TestTorchtitanVersions: torchtitan's data-parallel engine follows its
// version (the stack's torchtitan date, read by month): FSDP1 before PR
// #165 (2024-03-28: through March 2024), no context parallelism before PR
// #592 (2024-10-22: before October 2024), and from then until PR #685
// (2024-12-11: before December 2024) no FSDP at all when cp > 1 and dp is
// 1, so each rank held the whole model states.
func TestTorchtitanVersions(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-3.1-8B")
	job := func(version string, dp, cp int, engine string) Job {
		return Job{Framework: FrameworkTorchtitan, Engine: engine, NumGPUs: dp * cp, DP: dp, CP: cp, SeqLen: 8192,
			GradCheckpoint: "full", MasterWeights: "fp32", AllowLong: true, Stack: Stack{"torchtitan": version}}
	}
	tests := []struct {
		name   string
		job    Job
		engine string
		group  int
	}{
		{"fsdp1 era, no engine", job("2024-02", 8, 1, ""), EngineFSDP, 8},
		{"fsdp1 era, fsdp", job("2024-03", 8, 1, "fsdp"), EngineFSDP, 8},
		{"fsdp1 era, fsdp2 stated", job("2024-03-27", 8, 1, "fsdp2"), EngineFSDP2, 8},
		{"fsdp2 from PR #165", job("2024-04", 8, 1, "fsdp"), EngineFSDP2, 8},
		{"cp without dp before PR #685", job("2024-11", 1, 8, ""), "", 1},
		{"cp with dp before PR #685", job("2024-11", 2, 4, ""), EngineFSDP2, 8},
		{"cp without dp from PR #685", job("2024-12", 1, 8, ""), EngineFSDP2, 8},
		{"cp from PR #592", job("2024-10", 2, 4, ""), EngineFSDP2, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := estimateOK(t, m, tt.job)
			if r.Parallel.Engine != tt.engine || r.Parallel.ShardGroup != tt.group {
				t.Errorf("engine %q sharded %d ways, want %q over %d", r.Parallel.Engine, r.Parallel.ShardGroup, tt.engine, tt.group)
			}
			checkParts(t, r)
		})
	}
	// Unsharded, a rank holds the whole model's fp32 states: 8× those of
	// the fixed version's ranks.
	old := estimateOK(t, m, job("2024-11", 1, 8, ""))
	fixed := estimateOK(t, m, job("2024-12", 1, 8, ""))
	if got, want := part(old, "optimizer_states"), 8*part(fixed, "optimizer_states"); got != want {
		t.Errorf("unsharded optimizer states %d B, want 8 × %d B", got, part(fixed, "optimizer_states"))
	}
	if !strings.Contains(strings.Join(old.Warnings, "\n"), "PR #685") {
		t.Errorf("warnings %q should say why the states are not sharded", old.Warnings)
	}
	if _, err := Estimate(m, job("2024-09-30", 2, 4, "")); err == nil || !strings.Contains(err.Error(), "context parallelism") {
		t.Errorf("cp before torchtitan had it: %v, want an error naming context parallelism", err)
	}
}
