package web

import (
	"math"

	"github.com/gpumem/gpumem/memory"
)

// maxCount bounds every count in a request (tokens, batch, GPUs): far
// beyond any real job, small enough that products of counts stay exact.
const maxCount = 1 << 30

// maxComputeCapability bounds gpu_compute_capability, as the estimator does.
const maxComputeCapability = 199

// validateJob normalises the mode and checks what the estimators would otherwise reject with a
// less precise message, naming the JSON key at fault.
func validateJob(j *memory.Job) error {
	// Read the mode as gpumem estimate --mode does, so the job printed
	// back is the same.
	mode, err := memory.ParseMode(string(j.Mode))
	if err != nil {
		return badRequest("mode", "mode: %v", err)
	}
	j.Mode = mode
	for _, c := range []struct {
		key string
		v   int
	}{{"per_device_batch", j.MicroBatch}, {"grad_accum", j.GradAccum}, {"seq_len", j.SeqLen}, {"lora_rank", j.LoRARank},
		{"lora_alpha", j.LoRAAlpha}, {"images_per_sample", j.ImagesPerSample}, {"image_size", j.ImageSize},
		{"num_gpus", j.NumGPUs}, {"nodes", j.Nodes}, {"dp", j.DP}, {"tp", j.TP}, {"pp", j.PP}, {"cp", j.CP}, {"ep", j.EP},
		{"virtual_pipeline_stages", j.VirtualStages}, {"batch", j.Batch}, {"prompt_len", j.PromptLen}, {"gen_len", j.GenLen},
		{"max_model_len", j.MaxModelLen}, {"max_num_seqs", j.MaxNumSeqs}, {"max_num_batched_tokens", j.MaxNumBatchedTokens},
		{"block_size", j.BlockSize}} {
		if c.v < 0 || c.v > maxCount {
			return badRequest(c.key, "%s: want an integer in [0, %d] (0 = default), got %d", c.key, maxCount, c.v)
		}
	}
	if j.ZeRO < 0 || j.ZeRO > 3 {
		return badRequest("zero", "zero: want a stage 0, 1, 2 or 3, got %d", j.ZeRO)
	}
	if j.TrainableParams < 0 {
		return badRequest("trainable_params", "trainable_params: want a positive count, got %d", j.TrainableParams)
	}
	if cc := j.GPUComputeCapability; cc < 0 || cc > maxComputeCapability {
		return badRequest("gpu_compute_capability", "gpu_compute_capability: want the CUDA compute capability × 10 (90 for 9.0) or 0, got %d", cc)
	}
	if j.GPUMemory < 0 {
		return badRequest("gpu_memory_bytes", "gpu_memory_bytes: want a positive size, got %d", j.GPUMemory)
	}
	if u := j.GPUMemoryUtilization; math.IsNaN(u) || u < 0 || u > 1 {
		return badRequest("gpu_memory_utilization", "gpu_memory_utilization: want a fraction in (0, 1], got %g", u)
	}
	if d := j.LoRADropout; math.IsNaN(d) || d < 0 || d >= 1 {
		return badRequest("lora_dropout", "lora_dropout: want a probability in [0, 1), got %g", d)
	}
	for name, v := range j.Constants {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return badRequest("constants", "constants.%s: want a finite number", name)
		}
	}
	return nil
}
