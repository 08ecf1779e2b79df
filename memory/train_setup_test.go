package memory

import (
	"fmt"
	"strings"
	"testing"
)

// resolvedJob is what initJob derives from a job's option strings, for
// comparing two set-ups.
type resolvedJob struct {
	method, framework              string
	weight, compute, adapter       string
	amp, master, gradFP32, double  bool
	opt                            string
	attn                           trAttn
	ckpt                           ckptMode
	ckptEvery                      int
	loss                           lossImpl
	engine, offloadOpt, offloadPar string
	schedule                       string
	zero                           int
	nd                             float64
	torch1, vocab                  bool
	warnings                       string
}

func resolvedOf(s *setup) resolvedJob {
	return resolvedJob{
		method: s.method, framework: s.framework,
		weight: s.weight.Name, compute: s.compute.Name, adapter: s.adapter.Name,
		amp: s.amp, master: s.master, gradFP32: s.gradFP32, double: s.double,
		opt: s.opt.info.Name, attn: s.attn, ckpt: s.ckpt, ckptEvery: s.ckptEvery, loss: s.loss,
		engine: s.dist.engine, offloadOpt: s.dist.offloadOpt, offloadPar: s.dist.offloadParams,
		schedule: s.dist.schedule, zero: s.dist.zero, nd: s.dist.nd,
		torch1: s.torch1, vocab: s.hasVocabHead(),
		warnings: strings.Join(s.warnings, "\n"),
	}
}

// mangled returns v upper-cased and, when pad is set, wrapped in blanks:
// a spelling the option parsers fold back to v.
func mangled(v string, pad bool) string {
	if v == "" {
		return v
	}
	if pad {
		return " " + strings.ToUpper(v) + "\t"
	}
	return strings.ToUpper(v)
}

// TestInitJobSpellings checks that the set-up reads every option the same
// whether it is spelled as the tables spell it (the paths that skip
// folding) or upper-cased and padded with blanks (the folding paths).
// Engine and TaskHead are only upper-cased: the master-weights default and
// the task-head check lower-case them without trimming.
func TestInitJobSpellings(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	tests := []Job{
		{},
		{SeqLen: 4096, MicroBatch: 2, GradCheckpoint: "full", Attention: "flash"},
		{SeqLen: 512, Method: "lora", Attention: "eager", GradCheckpoint: "selective", FusedLoss: "liger"},
		{SeqLen: 512, Method: "dora", Dtype: "fp32", ComputeDtype: "fp16", AdapterDtype: "bf16"},
		{SeqLen: 512, Method: "qlora", QuantType: "fp4", Framework: "torchtune", FusedLoss: "chunked"},
		{SeqLen: 512, Method: "full_finetune", Attention: "sdpa", GradCheckpoint: "every-2", Optimizer: "adamw_torch_fused"},
		{SeqLen: 512, Method: "pretrain", Framework: "torchtitan", GradCheckpoint: "op", Engine: "fsdp2", NumGPUs: 8},
		{SeqLen: 512, Framework: "torchtitan", GradCheckpoint: "selective", Engine: "fsdp", FSDPStrategy: "shard_grad_op", NumGPUs: 8},
		{SeqLen: 512, Engine: "megatron", NumGPUs: 64, PP: 8, TP: 2, GradAccum: 8, GradCheckpoint: "selective", PipelineSchedule: "gpipe"},
		{SeqLen: 512, Engine: "megatron", NumGPUs: 16, PP: 4, VirtualStages: 2, ZeRO: 1, PipelineSchedule: "interleaved"},
		{SeqLen: 512, Engine: "deepspeed", NumGPUs: 8, ZeRO: 3, OffloadOptimizer: "cpu", OffloadParams: "nvme"},
		{SeqLen: 512, Engine: "ddp", NumGPUs: 4, MasterWeights: "fp32", Optimizer: "paged_adamw_8bit", Software: []string{"torch1"}},
		{SeqLen: 512, TaskHead: "sequence_classification", Attention: "math", GradCheckpoint: "none", FusedLoss: "none"},
		{SeqLen: 512, Engine: "zero3", NumGPUs: 2, MasterWeights: "none", OffloadOptimizer: "none", GPU: "H100-SXM"},
	}
	for i, job := range tests {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
			var plain, folded setup
			if err := plain.init(m, job); err != nil {
				t.Fatalf("init %+v: %v", job, err)
			}
			j := job
			for _, p := range []*string{&j.Method, &j.Framework, &j.Dtype, &j.ComputeDtype, &j.AdapterDtype,
				&j.MasterWeights, &j.QuantType, &j.Optimizer, &j.Attention, &j.GradCheckpoint, &j.FusedLoss,
				&j.FSDPStrategy, &j.OffloadOptimizer, &j.OffloadParams, &j.PipelineSchedule} {
				*p = mangled(*p, true)
			}
			j.Engine, j.TaskHead = mangled(j.Engine, false), mangled(j.TaskHead, false)
			j.Software = nil
			for _, sw := range job.Software {
				j.Software = append(j.Software, mangled(sw, true))
			}
			if err := folded.init(m, j); err != nil {
				t.Fatalf("init %+v: %v", j, err)
			}
			if got, want := resolvedOf(&folded), resolvedOf(&plain); got != want {
				t.Errorf("mangled spellings resolve to\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// TestInitJobErrors checks that bad option values are errors naming the
// setting, on the paths that skip folding as on the others.
func TestInitJobErrors(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	tests := []struct {
		job  Job
		want string
	}{
		{Job{Method: "lorax"}, "<method"},
		{Job{Method: " LoRAX "}, "<method"},
		{Job{Attention: "flashy"}, "<attn"},
		{Job{Attention: "FLASHY"}, "<attn"},
		{Job{GradCheckpoint: "every-0"}, "<grad_checkpoint"},
		{Job{GradCheckpoint: "sometimes"}, "<grad_checkpoint"},
		{Job{FusedLoss: "magic"}, "<fused_loss"},
		{Job{Framework: "jax"}, "<framework"},
		{Job{MasterWeights: "fp64"}, "<master_weights"},
		{Job{ComputeDtype: "int8"}, "<compute_dtype"},
		{Job{AdapterDtype: "nf4", Method: "lora"}, "<adapter_dtype"},
		{Job{Dtype: "fp64"}, "<dtype"},
		{Job{Optimizer: "adamw torch"}, "<optimizer"},
		{Job{Engine: "horovod"}, "<engine"},
		{Job{Engine: "deepspeed", NumGPUs: 2, OffloadOptimizer: "disk"}, "<offload_optimizer"},
		{Job{Engine: "deepspeed", NumGPUs: 2, OffloadParams: "gpu"}, "<offload_params"},
		{Job{PP: 2, NumGPUs: 2, PipelineSchedule: "zigzag"}, "<pipeline_schedule"},
		{Job{Constants: map[string]float64{"fragmentation": -1}}, "fragmentation"},
		{Job{Constants: map[string]float64{"no_such_constant": 1}}, "no_such_constant"},
	}
	for _, tt := range tests {
		var s setup
		err := s.init(m, tt.job)
		if err == nil || !strings.Contains(marked(err), tt.want) {
			t.Errorf("init %+v: err = %v, want one naming %s", tt.job, marked(err), tt.want)
		}
	}
}

// TestDistSizeError checks that each negative layout size is reported
// with its key, through resolveDist's sign test and distSizeError, and
// that non-negative sizes pass.
func TestDistSizeError(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	sizes := []*int{}
	var j Job
	sizes = append(sizes, &j.NumGPUs, &j.DP, &j.TP, &j.PP, &j.CP, &j.EP, &j.Nodes, &j.ZeRO, &j.VirtualStages)
	if len(sizes) != len(distKeys) {
		t.Fatalf("%d sizes, %d keys", len(sizes), len(distKeys))
	}
	for i, p := range sizes {
		for k := range sizes {
			*sizes[k] = k + 1
		}
		if err := distSizeError(&j); err != nil {
			t.Fatalf("positive sizes: %v", err)
		}
		*p = -1 << 40
		if err := distSizeError(&j); fieldKey(err) != distKeys[i] || !strings.HasPrefix(marked(err), "<"+distKeys[i]+">:") {
			t.Errorf("%s negative: err = %v", distKeys[i], err)
		}
		var s setup
		if err := s.init(m, j); fieldKey(err) != distKeys[i] || !strings.HasPrefix(marked(err), "<"+distKeys[i]+">:") {
			t.Errorf("init with %s negative: err = %v", distKeys[i], err)
		}
	}
}

// TestOneProcessLayout checks resolveDist's shortcut for one process:
// for every job oneProcessLayout accepts (each layout size 0 or 1,
// with and without sequence parallelism), the layout equals what the
// general resolveLayout reads, and resolveLayout adds no warning.
func TestOneProcessLayout(t *testing.T) {
	for _, id := range []string{"meta-llama/Llama-2-7b-hf", "mistralai/Mixtral-8x7B-v0.1"} {
		m := catalogModel(t, id)
		for bits := range 1 << 9 {
			var j Job
			sizes := []*int{&j.NumGPUs, &j.DP, &j.TP, &j.PP, &j.CP, &j.EP, &j.Nodes, &j.VirtualStages}
			for i, p := range sizes {
				*p = bits >> i & 1
			}
			j.SP = bits>>8&1 == 1
			j.SeqLen = 256
			if !oneProcessLayout(&j) {
				t.Fatalf("%+v: want a one-process layout", j)
			}
			var fast setup
			if err := fast.init(m, j); err != nil {
				t.Fatalf("%s %+v: %v", id, j, err)
			}
			general := fast
			general.warnings = nil
			d := distSpec{}
			if err := general.resolveLayout(&d); err != nil {
				t.Fatalf("%s %+v: resolveLayout: %v", id, j, err)
			}
			if len(general.warnings) > 0 {
				t.Errorf("%s %+v: resolveLayout warns %q", id, j, general.warnings)
			}
			// The fields resolveDist and setStage set after the layout.
			got := fast.dist
			d.sp, d.single = got.sp, got.single
			d.stage, d.stageLo, d.stageHi, d.stageLayers = got.stage, got.stageLo, got.stageHi, got.stageLayers
			d.first, d.last, d.inFlight = got.first, got.last, got.inFlight
			if got != d {
				t.Errorf("%s %+v: shortcut layout\n%+v\nwant\n%+v", id, j, got, d)
			}
			if !got.single {
				t.Errorf("%s %+v: not a single process", id, j)
			}
		}
	}
	for _, j := range []Job{{NumGPUs: 2}, {TP: 2}, {ZeRO: 1}, {Engine: "ddp"}, {FSDPStrategy: "full_shard"},
		{OffloadOptimizer: "cpu"}, {OffloadParams: "none"}, {PipelineSchedule: "1f1b"}, {VirtualStages: 2}} {
		if oneProcessLayout(&j) {
			t.Errorf("%+v: not a plain one-process layout", j)
		}
	}
}
