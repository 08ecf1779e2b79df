package memory

import (
	"strings"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// ServingResult is the KV-cache capacity of a vLLM deployment on one GPU
// (MODEL.md §7.3): what is left of gpu_memory_utilization × total memory
// after the weights, the profiled activation peak and non-torch memory,
// cut into pages of block_size tokens.
type ServingResult struct {
	// GPUMemoryBytes is the total memory of one GPU as CUDA reports it.
	GPUMemoryBytes units.Bytes `json:"gpu_memory_bytes"`
	// GPUMemoryUtilization is the fraction of it vLLM may use.
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	// RequestedBytes is GPUMemoryUtilization × GPUMemoryBytes.
	RequestedBytes units.Bytes `json:"requested_bytes"`
	// WeightsBytes is the weight memory of the most loaded GPU.
	WeightsBytes units.Bytes `json:"weights_bytes"`
	// ActivationPeakBytes is the torch peak of vLLM's profile run.
	ActivationPeakBytes units.Bytes `json:"activation_peak_bytes"`
	// NonTorchBytes is memory outside PyTorch's allocator measured by the profile.
	NonTorchBytes units.Bytes `json:"non_torch_bytes"`
	// KVPoolBytes is the memory left for the KV cache on one GPU (0 if none).
	KVPoolBytes units.Bytes `json:"kv_pool_bytes"`
	// KVBytesPerToken is one token's cache over the layers of one GPU.
	KVBytesPerToken int64 `json:"kv_bytes_per_token"`
	// BlockSize is the number of tokens per KV page.
	BlockSize int `json:"block_size"`
	// KVBlocks is the number of pages in the pool.
	KVBlocks int64 `json:"kv_blocks"`
	// KVTokens is the number of tokens the pool holds (KVBlocks × BlockSize).
	KVTokens int64 `json:"kv_tokens"`
	// MaxModelLen is the longest sequence the engine accepts.
	MaxModelLen int `json:"max_model_len"`
	// MaxNumSeqs and MaxNumBatchedTokens are the scheduler limits used by the profile run.
	MaxNumSeqs          int `json:"max_num_seqs"`
	MaxNumBatchedTokens int `json:"max_num_batched_tokens"`
	// SeqLen is the length of the sequences counted by MaxConcurrentSeqs.
	SeqLen int `json:"seq_len"`
	// MaxConcurrentSeqs is how many sequences of SeqLen tokens fit in the pool at once.
	MaxConcurrentSeqs int64 `json:"max_concurrent_seqs"`
	// MaxModelLenFits is whether one sequence of MaxModelLen tokens fits in the pool
	// (vLLM refuses to start otherwise).
	MaxModelLenFits bool `json:"max_model_len_fits"`
	// CUDAGraphBytes is the CUDA-graph pool, outside vLLM's budget (0 unless counted).
	CUDAGraphBytes units.Bytes `json:"cuda_graph_bytes,omitempty"`
	// Engine is the serving engine, vllm or sglang ("" for vllm).
	Engine string `json:"engine,omitempty"`
	// SGLang is what SGLang decides at startup (nil for vLLM); for SGLang
	// the fields above keep their meaning where SGLang has one (KVTokens
	// is max_total_num_tokens, MaxNumSeqs max_running_requests,
	// MaxNumBatchedTokens chunked_prefill_size, BlockSize page_size,
	// MaxModelLen context_len) and GPUMemoryUtilization, RequestedBytes
	// and NonTorchBytes are 0.
	SGLang *SGLangServing `json:"sglang,omitempty"`
	// RecurrentStateBytesPerSeq is one sequence's state in the
	// linear-attention and SSM layers of one GPU (0 for models without
	// them). vLLM takes it from the same pool as the KV cache, one page
	// per layer per running sequence, so BlockSize and KVTokens then
	// follow vLLM's hybrid layout.
	RecurrentStateBytesPerSeq int64 `json:"recurrent_state_bytes_per_seq,omitempty"`
}

// vLLM defaults and measured constants.
const (
	vllmDefaultUtilization = 0.9 // vllm/engine/arg_utils.py gpu_memory_utilization
	vllmDefaultBlockSize   = 16  // vllm/config/cache.py block_size on CUDA
	// vllmNonTorch is the non-torch memory increase vLLM's profiler reports
	// for single-node runs: 0.24-0.25 GiB in the v0.19 H100 and the
	// RTX 4090 TP=2 startup logs of the dev measurements.
	vllmNonTorch = units.GiB / 4
	// vllmSamplerBytesPerLogit is the sampler warm-up per logit of
	// max_num_seqs × vocab: bf16 logits (2) + fp32 copy (4) + fp32
	// temperature-scaled logits (4) + fp32 probabilities (4)
	// (vllm-project/vllm:vllm/v1/sample/sampler.py; the activation split of
	// the v0.19 Llama-3.1-8B, Qwen2.5-7B and Qwen3-8B records).
	vllmSamplerBytesPerLogit = 14
	// vllmV0SamplerBytesPerLogit is the same for the V0 engine (vLLM
	// before 0.8, rule vllm-v0-sampler-warmup), whose profile run keeps only the fp32
	// logits of max_num_seqs rows: 256 × 152064 × 4 B plus the hidden states
	// of 2048 tokens reproduce the 0.19 GiB of the RTX 4090 TP=2 record.
	vllmV0SamplerBytesPerLogit = 4
)

// vllmBatchDefaults are max_num_batched_tokens and max_num_seqs of
// `vllm serve` (vllm-project/vllm:vllm/engine/arg_utils.py
// get_batch_defaults): 8192 and 1024 on GPUs of at least 70 GiB other than
// the A100, 2048 and 256 otherwise.
func vllmBatchDefaults(total units.Bytes, gpu string) (batched, seqs int) {
	if total >= 70*units.GiB && !strings.Contains(strings.ToLower(gpu), "a100") {
		return 8192, 1024
	}
	return 2048, 256
}

// servingSetup are the resolved engine settings of a serving job.
type servingSetup struct {
	// samplerBytes is the sampler warm-up per logit of the engine version.
	samplerBytes float64
	total        units.Bytes
	util         float64
	maxModelLen  int
	maxSeqs      int
	maxBatched   int
	blockSize    int
	seqLen       int
}

// resolveServing fills the vLLM settings from job and model.
func resolveServing(m *model.Model, job Job, in *inferenceInputs) (servingSetup, error) {
	total, err := servingGPUMemory(job)
	if err != nil {
		return servingSetup{}, err
	}
	if key := sglangOnlyKey(job); key != "" {
		return servingSetup{}, FieldErrorf(key, "{"+key+"} is SGLang's setting; pass {inference_engine=sglang}, or for vLLM {gpu_memory_utilization}")
	}
	s := servingSetup{total: total, util: job.GPUMemoryUtilization, maxModelLen: job.MaxModelLen, blockSize: orInt(job.BlockSize, vllmDefaultBlockSize)}
	if s.util == 0 {
		s.util = vllmDefaultUtilization
	}
	s.samplerBytes = vllmSamplerBytesPerLogit
	if rulesOf(&job).has(ruleVLLMV0Sampler) {
		s.samplerBytes = vllmV0SamplerBytesPerLogit
	}
	if s.maxModelLen == 0 {
		s.maxModelLen = m.Text.MaxPositions
	}
	if s.maxModelLen <= 0 {
		return s, FieldErrorf("max_model_len", "%s states no max_position_embeddings: pass {max_model_len}", m.ID)
	}
	if mp := m.Text.MaxPositions; mp > 0 && s.maxModelLen > mp && !job.AllowLong {
		return s, FieldErrorf("max_model_len", "{max_model_len=%d} exceeds max_position_embeddings %d of %s; pass {allow_long=true} to estimate anyway", s.maxModelLen, mp, m.ID)
	}
	s.maxBatched, s.maxSeqs = vllmBatchDefaults(total, job.GPU)
	if job.MaxNumBatchedTokens > 0 {
		s.maxBatched = job.MaxNumBatchedTokens
	}
	if job.MaxNumSeqs > 0 {
		s.maxSeqs = job.MaxNumSeqs
	}
	s.seqLen = s.maxModelLen
	if t := in.tokens(); (job.PromptLen > 0 || job.GenLen > 0 || job.SeqLen > 0) && t > 0 {
		s.seqLen = int(min(t, int64(s.maxModelLen)))
	}
	return s, nil
}

// servingGPUMemory is the job's GPU memory (--gpu-memory, or the
// catalog total a front end filled in for --gpu).
func servingGPUMemory(job Job) (units.Bytes, error) {
	g := jobGPU(&job)
	if g.Memory > 0 {
		return g.Memory, nil
	}
	if job.GPU == "" {
		return 0, FieldErrorf("gpu", "serving needs the GPU's total memory: pass {gpu} (e.g. H100-SXM) or {gpu_memory_bytes} (e.g. 80GiB)")
	}
	return 0, FieldErrorf("gpu", "{gpu=%q}: serving needs the GPU's total memory and the job gives only the name: "+
		"pass {gpu_memory_bytes}, or fill it from the GPU catalog", job.GPU)
}
