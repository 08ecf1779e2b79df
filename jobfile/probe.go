package jobfile

import (
	"sort"
	"strings"
	"sync"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

// Named settings (dtype, optimizer, engine, ...) are checked by the
// estimators themselves, so a job file accepts exactly the spellings the
// CLI does: each value is estimated alone on a tiny model, in a job that
// gives it the context it needs, and an error there is a problem of that
// key. Settings that depend on the model (LoRA targets, trainable
// modules) are checked when the model is known.

// probeJobs builds, per key, the smallest job that exercises the value.
var probeJobs = map[string]func(j *memory.Job) memory.Job{
	"dtype":          func(j *memory.Job) memory.Job { return memory.Job{Mode: memory.Inference, Dtype: j.Dtype} },
	"master_weights": func(j *memory.Job) memory.Job { return memory.Job{MasterWeights: j.MasterWeights} },
	"compute_dtype":  func(j *memory.Job) memory.Job { return memory.Job{Dtype: "fp32", ComputeDtype: j.ComputeDtype} },
	"optimizer":      func(j *memory.Job) memory.Job { return memory.Job{Optimizer: j.Optimizer} },
	"attn":           func(j *memory.Job) memory.Job { return memory.Job{Attention: j.Attention} },
	"fused_loss":     func(j *memory.Job) memory.Job { return memory.Job{FusedLoss: j.FusedLoss} },
	"float8":         func(j *memory.Job) memory.Job { return memory.Job{Float8: j.Float8} },
	"framework":      func(j *memory.Job) memory.Job { return memory.Job{Framework: j.Framework} },
	"task_head":      func(j *memory.Job) memory.Job { return memory.Job{TaskHead: j.TaskHead} },
	"method": func(j *memory.Job) memory.Job {
		// A frozen base trains what trainable or trainable_params name,
		// which is checked with the model; the probe trains one parameter.
		if strings.EqualFold(strings.TrimSpace(j.Method), "frozen") {
			return memory.Job{Method: j.Method, TrainableParams: 1}
		}
		return memory.Job{Method: j.Method}
	},
	// Targets and virtual tokens every method accepts, so only the name
	// is checked (a method's own options are checked with the model).
	"peft_variant": func(j *memory.Job) memory.Job {
		return memory.Job{Method: "lora", PEFTVariant: j.PEFTVariant, LoRATargets: []string{"all-linear"}, NumVirtualTokens: 1}
	},
	"adapter_dtype": func(j *memory.Job) memory.Job { return memory.Job{Method: "lora", AdapterDtype: j.AdapterDtype} },
	"quant_type":    func(j *memory.Job) memory.Job { return memory.Job{Method: "qlora", QuantType: j.QuantType} },
	// One GPU: the name is checked; whether it suits sharding depends on
	// the job's engine and dtype, which the estimate checks.
	"quant_storage": func(j *memory.Job) memory.Job { return memory.Job{Method: "qlora", QuantStorage: j.QuantStorage} },
	"engine":        func(j *memory.Job) memory.Job { return memory.Job{Engine: j.Engine, NumGPUs: 2} },
	"fsdp_strategy": func(j *memory.Job) memory.Job {
		return memory.Job{Engine: "fsdp", NumGPUs: 2, FSDPStrategy: j.FSDPStrategy}
	},
	"offload_optimizer": func(j *memory.Job) memory.Job {
		return memory.Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 2, OffloadOptimizer: j.OffloadOptimizer}
	},
	"offload_params": func(j *memory.Job) memory.Job {
		return memory.Job{Engine: "deepspeed", ZeRO: 3, NumGPUs: 2, OffloadParams: j.OffloadParams}
	},
	"kv_cache_dtype": func(j *memory.Job) memory.Job {
		return memory.Job{Mode: memory.Inference, KVCacheDtype: j.KVCacheDtype}
	},
	"inference_engine": func(j *memory.Job) memory.Job {
		return memory.Job{Mode: memory.Inference, InferenceEngine: j.InferenceEngine}
	},
	"software": func(j *memory.Job) memory.Job { return memory.Job{Software: j.Software} },
}

var (
	probeOnce  sync.Once
	probeModel *model.Model
)

// tinyModel is a two-layer synthetic decoder: enough for every setting
// to be estimated, small enough to cost microseconds.
func tinyModel() *model.Model {
	probeOnce.Do(func() {
		m, _, err := Shape{Name: "probe", Hidden: 256, Layers: 2, Heads: 2, Vocab: 1024}.Model()
		if err == nil {
			probeModel = m
		}
	})
	return probeModel
}

// probeValues estimates each named setting of the file alone.
func (r *reader) probeValues(j *memory.Job, keys map[string]bool) {
	m := tinyModel()
	if m == nil {
		return
	}
	names := make([]string, 0, len(probeJobs))
	for k := range probeJobs {
		if keys[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		pj := probeJobs[k](j)
		pj.SeqLen = 64
		if _, err := memory.Estimate(m, pj); err != nil {
			r.add(k, "%v", err)
		}
	}
}
