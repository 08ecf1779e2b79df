package jobfile

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpumem/gpumem/internal/decoded"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// The engine calculators describe a training run in five sections:
//
//	{
//	  "model":       {"name": "llama2-7b", "num_parameters": "7B", "num_layers": 32,
//	                  "hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000,
//	                  "max_seq_len": 4096, "moe_enabled": false, "num_experts": 8, "top_k": 2},
//	  "training":    {"batch_size": 4, "gradient_accumulation_steps": 8, "optimizer": "adamw",
//	                  "dtype": "bf16", "activation_checkpointing": 2},
//	  "parallelism": {"tensor_parallel_size": 1, "pipeline_parallel_size": 1,
//	                  "data_parallel_size": 8, "sequence_parallel": false},
//	  "engine":      {"type": "deepspeed", "zero_stage": 3, "offload_optimizer": "cpu",
//	                  "offload_param": "none", "zero_init": true, "sharding_strategy": "full_shard"},
//	  "hardware":    {"num_gpus": 8, "gpu_memory_gb": 80}
//	}
//
// ParseCalculator reads it faithfully where gpumem has the setting and
// says so in File.Notes where it reads a field in its own way.

// calculatorSections are the sections that mark the layout.
var calculatorSections = []string{"model", "training", "parallelism", "engine", "hardware"}

// isCalculator reports whether obj is in the engine calculators' layout:
// it has a training, parallelism or hardware section, or an engine object
// (a gpumem job file's "engine" is a string).
func isCalculator(obj map[string]any) bool {
	for _, k := range []string{"training", "parallelism", "hardware"} {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	_, ok := obj["engine"].(map[string]any)
	return ok
}

// ParseCalculator decodes an engine-calculator file (JSON or YAML). Its
// model section becomes a [Shape]; the other sections become Job fields.
// Every problem is reported in one [*Error].
func ParseCalculator(data []byte, name string) (*File, error) {
	obj, err := decodeObject(data, name)
	if err != nil {
		return nil, &Error{File: name, Problems: []Problem{{Message: err.Error()}}}
	}
	return parseCalculatorObject(obj, name)
}

// calcReader carries the state of reading one calculator file.
type calcReader struct {
	*reader
	f    *File
	keys map[string]bool
	// paths maps a memory.Job key to the file key that set it, so that
	// problems found on the job name the file's key.
	paths map[string]string
}

func parseCalculatorObject(obj map[string]any, name string) (*File, error) {
	c := &calcReader{reader: newReader(name), f: &File{Name: name, Layout: LayoutCalculator}, keys: map[string]bool{},
		paths: map[string]string{"seq_len": "model.max_seq_len"}}
	j := &c.f.Job
	j.Mode = memory.Train
	c.keys["mode"] = true
	for _, sec := range sortedKeys(obj) {
		v := obj[sec]
		body, ok := v.(map[string]any)
		if !ok {
			if sec == "model" {
				c.readModel(v, c.f) // a reference, as in a gpumem job file
				continue
			}
			if !contains(calculatorSections, sec) {
				unknownKey(c.reader, sec, calculatorSections)
				continue
			}
			c.add(sec, "want an object, got %s", decoded.Kind(v))
			continue
		}
		switch sec {
		case "model":
			c.model(body)
		case "training":
			c.training(body)
		case "parallelism":
			c.parallelism(body)
		case "engine":
			c.engine(body)
		case "hardware":
			c.hardware(body)
		default:
			unknownKey(c.reader, sec, calculatorSections)
		}
	}
	if c.f.Model == "" && c.f.Shape == nil {
		c.add("model", "missing: give model.num_parameters (e.g. \"7B\") or a model reference")
	}
	n := len(c.problems)
	c.checkJob(j, c.keys)
	for i := n; i < len(c.problems); i++ {
		if p, ok := c.paths[c.problems[i].Key]; ok {
			c.problems[i].Key = p
		}
	}
	for k := range c.keys {
		c.f.Keys = append(c.f.Keys, k)
	}
	sort.Strings(c.f.Keys)
	if err := c.err(); err != nil {
		return c.f, err
	}
	return c.f, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (c *calcReader) note(format string, args ...any) {
	c.f.Notes = append(c.f.Notes, fmt.Sprintf(format, args...))
}

// model reads the model section into a Shape. max_seq_len is the training
// sequence length; moe_enabled gates the expert fields.
func (c *calcReader) model(body map[string]any) {
	moe := false
	var experts, topK int
	seq := 2048 // the calculators' default max_seq_len
	s := c.shape("model", body, func(key string, v any, s *Shape) bool {
		k := "model." + key
		switch key {
		case "max_seq_len":
			if n, ok := c.integer(k, v, 1); ok {
				seq = int(n)
			}
		case "moe_enabled":
			moe, _ = c.boolean(k, v)
		case "largest_layer_params":
			if _, ok := c.count(k, v); ok {
				c.note("model.largest_layer_params is not used: gpumem takes the largest module from the model's inventory")
			}
		default:
			return false
		}
		return true
	})
	// The calculators keep num_experts and top_k (defaults 8 and 2) even
	// when moe_enabled is false; only moe_enabled makes the model MoE.
	experts, topK = s.Experts, s.ExpertsPerToken
	if moe {
		s.Experts, s.ExpertsPerToken = max(experts, 0), topK
		if s.Experts == 0 {
			s.Experts = 8
		}
		if s.ExpertsPerToken == 0 {
			s.ExpertsPerToken = 2
		}
	} else {
		s.Experts, s.ExpertsPerToken, s.ExpertFFN, s.SharedFFN = 0, 0, 0, 0
	}
	if s.MaxPositions == 0 {
		s.MaxPositions = max(seq, 4096)
	}
	c.f.Shape = &s
	c.f.Job.SeqLen = seq
	c.keys["seq_len"] = true
}

// training reads batch, accumulation, optimizer, dtype and checkpointing.
func (c *calcReader) training(body map[string]any) {
	j := &c.f.Job
	known := []string{"batch_size", "gradient_accumulation_steps", "optimizer", "dtype", "activation_checkpointing"}
	c.fields("training", body, known, func(key, k string, v any) bool {
		switch key {
		case "batch_size":
			c.setInt(k, v, 1, &j.MicroBatch, "per_device_batch")
		case "gradient_accumulation_steps":
			c.setInt(k, v, 1, &j.GradAccum, "grad_accum")
		case "optimizer":
			c.optimizer(k, v)
		case "dtype":
			c.dtype(k, v)
		case "activation_checkpointing":
			c.checkpointing(k, v)
		default:
			return false
		}
		return true
	})
}

// calcOptimizers maps the calculators' optimizer names onto HF optim names.
var calcOptimizers = map[string]string{
	"adam": "adam", "adamw": "adamw_torch", "sgd": "sgd", "adamw_8bit": "adamw_bnb_8bit", "adamw-8bit": "adamw_bnb_8bit",
}

func (c *calcReader) optimizer(k string, v any) {
	s, ok := c.str(k, v)
	if !ok {
		return
	}
	name, ok := calcOptimizers[strings.ToLower(s)]
	if !ok {
		name = s // any name gpumem knows
	}
	c.f.Job.Optimizer = name
	c.keys["optimizer"] = true
	c.paths["optimizer"] = k
}

// dtype reads the training dtype. The calculators count fp16/bf16 training
// as mixed precision with fp32 optimizer states and master weights
// (2 + 2 + 12 bytes per parameter with Adam, ZeRO §3.1), so the job says
// master_weights fp32.
func (c *calcReader) dtype(k string, v any) {
	s, ok := c.str(k, v)
	if !ok {
		return
	}
	j := &c.f.Job
	j.Dtype = s
	c.keys["dtype"] = true
	c.paths["dtype"] = k
	if d, err := memory.ParseDType(s); err == nil && (d.Name == "bf16" || d.Name == "fp16") {
		j.MasterWeights = "fp32"
		c.keys["master_weights"] = true
		c.note("training.dtype %s read as mixed precision: %s weights and gradients, fp32 master weights and optimizer states", s, d.Name)
	}
}

// checkpointing maps the calculators' levels 0-4: 0 none, 4 full; the
// intermediate levels have no framework counterpart and are read as
// selective recomputation (Megatron's selective recompute, Korthikanti
// et al. §5).
func (c *calcReader) checkpointing(k string, v any) {
	n, ok := c.integer(k, v, 0)
	if !ok {
		return
	}
	j := &c.f.Job
	switch {
	case n == 0:
		j.GradCheckpoint = ""
	case n >= 4:
		if n > 4 {
			c.add(k, "want a level 0-4, got %d", n)
			return
		}
		j.GradCheckpoint = "full"
	default:
		j.GradCheckpoint = "selective"
		c.note("training.activation_checkpointing %d read as selective recomputation (levels 1-3 have no framework counterpart)", n)
	}
	c.keys["grad_checkpoint"] = true
}

func (c *calcReader) parallelism(body map[string]any) {
	j := &c.f.Job
	known := []string{"tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "sequence_parallel"}
	c.fields("parallelism", body, known, func(key, k string, v any) bool {
		switch key {
		case "tensor_parallel_size":
			c.setInt(k, v, 1, &j.TP, "tp")
		case "pipeline_parallel_size":
			c.setInt(k, v, 1, &j.PP, "pp")
		case "data_parallel_size":
			c.setInt(k, v, 1, &j.DP, "dp")
		case "sequence_parallel":
			if b, ok := c.boolean(k, v); ok {
				j.SP = b
				c.keys["sp"] = true
			}
		default:
			return false
		}
		return true
	})
}

// calcEngines maps the calculators' engine names onto gpumem's.
var calcEngines = map[string]string{
	"pytorch": memory.EngineDDP, "pytorch_ddp": memory.EngineDDP, "ddp": memory.EngineDDP, "deepspeed": memory.EngineDeepSpeed,
	"megatron": memory.EngineMegatron, "megatron_lm": memory.EngineMegatron, "megatron-lm": memory.EngineMegatron, "fsdp": memory.EngineFSDP,
}

func (c *calcReader) engine(body map[string]any) {
	j := &c.f.Job
	known := []string{"type", "zero_stage", "offload_optimizer", "offload_param", "zero_init", "sharding_strategy"}
	c.fields("engine", body, known, func(key, k string, v any) bool {
		switch key {
		case "type":
			s, ok := c.str(k, v)
			if !ok {
				return true
			}
			e, ok := calcEngines[strings.ToLower(s)]
			if !ok {
				c.add(k, "unknown engine %q (want pytorch_ddp, deepspeed, megatron_lm or fsdp; megatron_deepspeed is not modelled)", s)
				return true
			}
			j.Engine = e
			c.keys["engine"] = true
			c.paths["engine"] = k
		case "zero_stage":
			if v == nil {
				return true // null: not DeepSpeed
			}
			n, ok := c.integer(k, v, 0)
			if ok && n > 3 {
				c.add(k, "want a stage 0-3, got %d", n)
			} else if ok {
				j.ZeRO = int(n)
				c.keys["zero"] = true
			}
		case "offload_optimizer":
			c.setString(k, v, &j.OffloadOptimizer, "offload_optimizer")
		case "offload_param":
			c.setString(k, v, &j.OffloadParams, "offload_params")
		case "zero_init":
			if _, ok := c.boolean(k, v); ok {
				c.note("engine.zero_init only changes host memory while the model is built; the GPU estimate does not depend on it")
			}
		case "sharding_strategy":
			c.setString(k, v, &j.FSDPStrategy, "fsdp_strategy")
		default:
			return false
		}
		return true
	})
}

// hardware reads the GPU count and memory. gpu_memory_gb is the card's
// label ("80" for an 80 GB card), which is close to GiB for data-centre
// cards (the A100 80GB holds 80 GiB, the H100 80GB 79.6 GiB), so it is
// read as GiB.
func (c *calcReader) hardware(body map[string]any) {
	j := &c.f.Job
	known := []string{"num_gpus", "gpu_memory_gb", "total_gpu_memory_gb"}
	c.fields("hardware", body, known, func(key, k string, v any) bool {
		switch key {
		case "num_gpus":
			c.setInt(k, v, 1, &j.NumGPUs, "num_gpus")
		case "gpu_memory_gb":
			x, ok := c.float(k, v)
			if !ok || x <= 0 || x > 1<<20 {
				if ok {
					c.add(k, "want a positive size in GB, got %v", v)
				}
				return true
			}
			j.GPUMemory = units.FromFloat(x * float64(units.GiB))
			c.keys["gpu_memory_bytes"] = true
			c.note("hardware.gpu_memory_gb %v read as %v GiB (the card's label)", x, x)
		case "total_gpu_memory_gb":
			c.float(k, v) // derived by the calculators; nothing to set
		default:
			return false
		}
		return true
	})
}

func (c *calcReader) setInt(k string, v any, lo int64, dst *int, key string) {
	if n, ok := c.integer(k, v, lo); ok {
		*dst = int(n)
		c.keys[key] = true
	}
}

func (c *calcReader) setString(k string, v any, dst *string, key string) {
	if s, ok := c.str(k, v); ok {
		*dst = s
		c.keys[key] = true
		c.paths[key] = k
	}
}
