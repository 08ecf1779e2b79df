package memory

import (
	"strings"

	"github.com/gpumem/gpumem/units"
)

// The loading phase of a training job: the checkpoint read into host RAM
// and placed on the GPUs before the first step. Users run out of memory
// here too — every rank of a node holding the whole model in host RAM,
// or DeepSpeed moving a model that was not built under zero.Init to each
// GPU whole before ZeRO-3 partitions it — so its peaks are reported next
// to the training peak ([Loading]) and plan counts the GPU one in its
// verdicts.
//
// What each path holds comes from the stacks' source:
//
//   - transformers builds the model on the meta device and loads one
//     weight after the other (from_pretrained lost low_cpu_mem_usage=False
//     in huggingface/transformers PR #36963, 2025); without a device_map
//     the model is materialised in host RAM and the trainer moves it to
//     the GPU (one copy per process); with one, each weight goes straight
//     to its GPU. low_cpu_mem_usage=False (transformers before that PR)
//     first builds a randomly initialised model and then loads a state
//     dict into it: a second copy of the weights in host RAM.
//   - bitsandbytes quantizes on load: each weight arrives on the GPU in
//     the checkpoint's dtype and is replaced by its 4-bit form (the
//     quantizer places the model on the current GPU when no device_map is
//     given), so the GPU holds the quantized model plus one weight in the
//     checkpoint dtype.
//   - DeepSpeed ZeRO-3 under zero.Init partitions each parameter as it is
//     created; transformers then reads every checkpoint shard into one CPU
//     state dict (modeling_utils.py _load_pretrained_model, ZeRO-3 branch:
//     merged_state_dict) and loads it module by module, gathering each
//     module's own parameters (integrations/deepspeed.py
//     _load_state_dict_into_zero3_model, GatheredParameters over
//     named_parameters(recurse=False)). Without zero.Init, DeepSpeed moves
//     the whole model to the GPU before partitioning it
//     (deepspeedai/DeepSpeed deepspeed/runtime/engine.py
//     _configure_distributed_model @ edaa722: "zero.Init() handles device
//     placement of model", otherwise self.module.to(self.device)).
//     accelerate's zero3_init_flag and the HF Trainer turn zero.Init on
//     for ZeRO-3 when the DeepSpeed config exists before from_pretrained
//     (huggingface/accelerate src/accelerate/utils/dataclasses.py @
//     16cb6eb: zero3_init_flag defaults to hf_ds_config.is_zero3()).
//   - FSDP moves and shards one wrapped unit at a time. With accelerate's
//     cpu_ram_efficient_loading only local rank 0 reads the checkpoint
//     and the other ranks hold empty weights; sync_module_states
//     broadcasts rank 0's units, and accelerate forces it on with
//     cpu_ram_efficient_loading for FSDP1 (same file: "sync_module_states
//     cannot be False since efficient cpu ram loading enabled").
const (
	loadSourceHF = "huggingface/transformers modeling_utils.py from_pretrained (meta-device init since PR #36963; " +
		"device_map places each weight on its GPU; low_cpu_mem_usage=False loads a state dict into a built model)"
	loadSourceBnb = "huggingface/transformers quantizers/quantizer_bnb_4bit.py (quantized on load, placed on the current GPU); " +
		"huggingface/peft utils/other.py prepare_model_for_kbit_training (fp32 casts of the unquantized weights)"
	loadSourceZeRO = "huggingface/transformers modeling_utils.py _load_pretrained_model (ZeRO-3: merged_state_dict of every shard), " +
		"integrations/deepspeed.py _load_state_dict_into_zero3_model; deepspeedai/DeepSpeed deepspeed/runtime/engine.py " +
		"_configure_distributed_model @ edaa722; huggingface/accelerate utils/dataclasses.py zero3_init_flag @ 16cb6eb"
	loadSourceMegatron = "NVIDIA/Megatron-LM megatron/core/dist_checkpointing (each rank loads its own shards of a distributed checkpoint)"
	loadSourceFSDP     = "huggingface/accelerate utils/dataclasses.py (cpu_ram_efficient_loading, sync_module_states) and " +
		"utils/fsdp_utils.py fsdp2_prepare_model @ 16cb6eb; torch FSDP wraps and shards one unit at a time"
)

// Loading paths (Loading.Path).
const (
	LoadHostThenGPU = "from_pretrained into host RAM, then moved to the GPU"
	LoadDeviceMap   = "from_pretrained with a device_map: each weight straight to the GPU"
	LoadQuantized   = "bitsandbytes: each weight quantized on the GPU as it loads"
	LoadZeroInit    = "DeepSpeed zero.Init: partitioned as built; each module gathered while it loads; every shard read into a CPU state dict"
	LoadNoZeroInit  = "DeepSpeed without zero.Init: whole model built in host RAM and moved to every GPU before ZeRO-3 partitions it"
	LoadFSDP        = "FSDP: each unit moved to the GPU and sharded in turn; every rank reads the checkpoint"
	LoadFSDPRank0   = "FSDP with cpu_ram_efficient_loading: local rank 0 reads the checkpoint; units broadcast and sharded in turn"
	LoadMegatron    = "Megatron: each rank reads the tensors it owns from a distributed checkpoint"
)

// loadSpec is the resolved loading path of a training job.
type loadSpec struct {
	deviceMap bool // from_pretrained places each weight on the GPU
	lowCPU    bool // meta-device init (low_cpu_mem_usage)
	zeroInit  bool // DeepSpeed ZeRO-3 built under zero.Init
	rank0     bool // FSDP cpu_ram_efficient_loading
	sync      bool // FSDP1 sync_module_states
}

// resolveLoading reads the loading switches: device_map, low_cpu_mem_usage,
// zero_init, cpu_ram_efficient_loading and sync_module_states, with the
// defaults of the stacks, and warns about switches the engine ignores.
func (s *setup) resolveLoading() error {
	j, d := s.job, &s.dist
	l := loadSpec{lowCPU: true, zeroInit: true}
	dm, err := parseDeviceMap(j.DeviceMap)
	if err != nil {
		return err
	}
	zero3 := d.engine == EngineDeepSpeed && d.zero == 3
	switch {
	case zero3 || s.isFSDP():
		if dm == deviceMapGPU {
			s.warn("device_map is not used with DeepSpeed ZeRO-3 or FSDP (transformers refuses it there): ignored")
		}
	case dm == deviceMapGPU || s.weight.Quantized:
		// The bitsandbytes quantizer places an unmapped model on the
		// current GPU (quantizer_bnb_4bit.py update_device_map).
		l.deviceMap = true
	}
	if j.LowCPUMemUsage != nil {
		l.lowCPU = *j.LowCPUMemUsage
	}
	if j.ZeroInit != nil {
		l.zeroInit = *j.ZeroInit
		if !zero3 {
			s.warn("zero_init applies to DeepSpeed ZeRO-3 only: ignored")
		}
	}
	if j.CPURAMEfficientLoading != nil {
		l.rank0 = *j.CPURAMEfficientLoading
		if l.rank0 && !s.isFSDP() {
			s.warn("cpu_ram_efficient_loading applies to FSDP only: ignored")
			l.rank0 = false
		}
	}
	l.sync = l.rank0
	if j.SyncModuleStates != nil {
		l.sync = *j.SyncModuleStates
		if !s.isFSDP() {
			s.warn("sync_module_states applies to FSDP only: ignored")
		}
		if l.rank0 && !l.sync && d.engine == EngineFSDP {
			s.warn("sync_module_states=false with cpu_ram_efficient_loading: accelerate sets it to true (the other ranks hold empty weights until rank 0 broadcasts them)")
			l.sync = true
		}
	}
	s.load = l
	return nil
}

// deviceMap values: unset, none (host RAM first) and a GPU placement.
const (
	deviceMapUnset = iota
	deviceMapNone
	deviceMapGPU
)

// parseDeviceMap reads Job.DeviceMap: none (or cpu: the model in host
// RAM, moved by the trainer) or a GPU placement (auto, cuda, local,
// balanced, sequential, a GPU index).
func parseDeviceMap(v string) (int, error) {
	switch x := strings.ToLower(strings.TrimSpace(v)); x {
	case "":
		return deviceMapUnset, nil
	case "none", "cpu", "false", "no":
		return deviceMapNone, nil
	case "auto", "cuda", "gpu", "local", "balanced", "balanced_low_0", "sequential", "true", "yes":
		return deviceMapGPU, nil
	default:
		if strings.Trim(x, "0123456789") == "" || strings.HasPrefix(x, "cuda:") {
			return deviceMapGPU, nil
		}
	}
	return 0, FieldErrorf("device_map", "{device_map}: want none, auto, cuda or local, got %q", v)
}

// resolvedLoading fills the loading switches that apply to the job.
func (s *setup) resolvedLoading(j *Job, a *KeySet, box *trainBox) {
	l, d := &s.load, &s.dist
	zero3 := d.engine == EngineDeepSpeed && d.zero == 3
	if !zero3 && !s.isFSDP() {
		fillString(&j.DeviceMap, cond(l.deviceMap, "auto", "none"), keyDeviceMap, a)
		if j.LowCPUMemUsage == nil && !l.deviceMap {
			box.lowCPU = l.lowCPU
			j.LowCPUMemUsage = &box.lowCPU
			a.add(keyLowCPUMem)
		}
	}
	if zero3 && j.ZeroInit == nil {
		box.zeroInit = l.zeroInit
		j.ZeroInit = &box.zeroInit
		a.add(keyZeroInit)
	}
	if s.isFSDP() {
		if j.CPURAMEfficientLoading == nil {
			box.rank0 = l.rank0
			j.CPURAMEfficientLoading = &box.rank0
			a.add(keyCPURAMLoading)
		}
		if j.SyncModuleStates == nil && d.engine == EngineFSDP {
			box.sync = l.sync
			j.SyncModuleStates = &box.sync
			a.add(keySyncModule)
		}
	}
}

// Loading is the loading phase of a training job: the checkpoint read
// into host RAM and onto the GPUs before the first step. Its GPU peak
// counts in plan's verdicts next to the training peak.
type Loading struct {
	// Path says how the model loads (the Load* constants).
	Path string `json:"path"`
	// AllocatedBytes is the most tensor memory one GPU holds while the
	// model loads: the weights resident so far plus the transient of the
	// path (a weight being quantized, a module or unit being gathered, or
	// the whole model before ZeRO-3 partitions it).
	AllocatedBytes units.Bytes `json:"allocated_bytes"`
	// DeviceBytes is the GPU's peak as nvidia-smi shows it while loading:
	// AllocatedBytes plus the CUDA context and other non-PyTorch memory
	// (no cuBLAS workspace yet: no matmul has run).
	DeviceBytes units.Bytes `json:"device_bytes"`
	// HostProcessBytes is the host RAM one process holds at its loading
	// peak (the most loaded process of the node), and HostBytes that of
	// the node: all its processes together.
	HostProcessBytes units.Bytes `json:"host_process_bytes"`
	HostBytes        units.Bytes `json:"host_bytes"`
	// ProcessesPerNode is the number of training processes on a node.
	ProcessesPerNode int `json:"processes_per_node"`
	// Formula says how the figures were computed; Source where the
	// mechanism comes from.
	Formula string `json:"formula"`
	Source  string `json:"source"`
}

// loading computes the loading phase of the current stage's rank.
func (s *setup) loading(t *trainParts) Loading {
	d, st, l := &s.dist, &t.st, &s.load
	procs := max(d.world/max(d.nodes, 1), 1)
	load := s.weight.BytesPerElement() // from_pretrained(dtype=...) converts as it loads
	ckpt := s.checkpointBytes()
	if s.weight.Quantized {
		load = ckpt
	}
	whole := float64(s.tab.total) // from_pretrained builds the whole model, whatever the layout
	var out Loading
	var alloc, proc float64
	node := -1.0 // procs × proc unless set
	zero3 := d.engine == EngineDeepSpeed && d.zero == 3
	switch {
	case zero3 && l.zeroInit:
		out.Path, out.Source = LoadZeroInit, loadSourceZeRO
		out.Formula = "GPU: ZeRO-3 partition of the weights + one module's own parameters gathered; host per process: every shard in one state dict (checkpoint dtype)"
		alloc = st.weights + s.largestModule(false)*s.weight.BytesPerElement()
		proc = whole * ckpt
	case zero3:
		out.Path, out.Source = LoadNoZeroInit, loadSourceZeRO
		out.Formula = "GPU: the rank's whole model in the engine's dtype (module.to(device) before partitioning); host per process: the model built by from_pretrained"
		alloc = st.weightsWhole
		proc = s.hostCopies(whole*load, whole*ckpt)
	case s.isFSDP():
		unit, root := s.fsdpUnits(false)
		alloc = st.weights + max(unit, root)*s.weight.BytesPerElement()
		out.Source = loadSourceFSDP
		if l.rank0 {
			out.Path = LoadFSDPRank0
			out.Formula = "GPU: sharded weights + the largest unit whole; host: the model on local rank 0 only"
			proc = whole * load
			node = proc
		} else {
			out.Path = LoadFSDP
			out.Formula = "GPU: sharded weights + the largest unit whole; host per process: the model built by from_pretrained"
			proc = s.hostCopies(whole*load, whole*ckpt)
		}
	case s.weight.Quantized && l.deviceMap:
		out.Path, out.Source = LoadQuantized, loadSourceBnb
		out.Formula = "GPU: quantized weights + the largest tensor in the checkpoint dtype; host per process: that tensor"
		big := s.tab.maxNumel * ckpt
		alloc = st.weights + big
		proc = big
	case l.deviceMap:
		out.Path, out.Source = LoadDeviceMap, loadSourceHF
		out.Formula = "GPU: the weights; host per process: the largest tensor"
		alloc = st.weights
		proc = s.tab.maxNumel * load
	case d.engine == EngineMegatron:
		out.Path, out.Source = LoadMegatron, loadSourceMegatron
		out.Formula = "GPU: the rank's weights; host per process: the tensors of its own checkpoint shards"
		alloc = st.weights
		proc = st.weightsWhole / s.weight.BytesPerElement() * ckpt
	default:
		out.Path, out.Source = LoadHostThenGPU, loadSourceHF
		out.Formula = "GPU: the weights; host per process: the model built by from_pretrained"
		if !l.lowCPU {
			out.Formula = "GPU: the weights; host per process: the model built by from_pretrained + the state dict loaded into it (low_cpu_mem_usage=false)"
		}
		alloc = st.weights
		proc = s.hostCopies(whole*load, whole*ckpt)
	}
	if node < 0 {
		node = proc * float64(procs)
	}
	out.AllocatedBytes = units.FromFloat(alloc)
	out.DeviceBytes = units.Add(units.Add(out.AllocatedBytes, t.ov.CUDAContext), t.ov.Misc)
	out.HostProcessBytes, out.HostBytes = units.FromFloat(proc), units.FromFloat(node)
	out.ProcessesPerNode = procs
	return out
}

// hostCopies is the host RAM of a model built by from_pretrained without
// a device_map: the model, plus the state dict it is loaded from when
// low_cpu_mem_usage is off (the whole checkpoint: its shard sizes are
// not known, and a single-file checkpoint is one shard).
func (s *setup) hostCopies(model, stateDict float64) float64 {
	if s.load.lowCPU {
		return model
	}
	return model + stateDict
}

// checkpointBytes is the bytes per parameter of the checkpoint on disk:
// its torch_dtype (a quantized base is read in it and quantized on
// load), else the weights' dtype.
func (s *setup) checkpointBytes() float64 {
	switch strings.ToLower(strings.TrimPrefix(s.m.TorchDtype, "torch.")) {
	case "bfloat16", "bf16", "float16", "fp16", "half":
		return 2
	case "float32", "fp32", "float":
		return 4
	}
	if s.weight.Quantized {
		return 2 // bf16, the dtype checkpoints are released in
	}
	return s.weight.BytesPerElement()
}

// loadingDevice is the device peak of the loading phase, for [Peaks].
func (s *setup) loadingDevice(t *trainParts) units.Bytes {
	return s.loading(t).DeviceBytes
}
