// Package probe measures the GPU memory of real runs, so that estimates
// can be checked against them and the memory model calibrated.
//
// Nothing in this package has been run on a GPU while it was written: the
// machine had no GPU, no PyTorch and no network. Every test replaces
// nvidia-smi and python3 with scripts (testdata/fake-nvidia-smi,
// testdata/fake-python3) that replay recorded-looking output. The parsing,
// process-tree filtering, peak detection, signal handling and error paths
// are tested that way; the PyTorch script runs in the tests under the real
// python3 against stand-in torch, transformers, peft and pynvml packages
// (testdata/fakepy), which check its control flow, never its numbers.
// Treat the first runs on real hardware as the script's first real test.
//
// # Probing a command
//
// [Run] starts a command in its own process group and samples GPU memory
// every [Options].Interval through a [Sampler] (the real one, [NvidiaSMI],
// runs
//
//	nvidia-smi --query-gpu=index,uuid,memory.used,memory.total --format=csv,noheader,nounits
//	nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits
//
// per sample). Only the processes of the command's tree, read from /proc,
// count; Options.AllProcesses counts everything on the GPUs, for containers
// whose PIDs differ from the ones nvidia-smi shows. The [Report] has the
// peak per GPU, when it happened, the whole timeline, the command's exit
// code (128+n when signal n killed it) and the end of its stderr. Signals
// sent on Options.Signals are forwarded to the process group; when the
// context ends the group gets SIGTERM, then SIGKILL after
// Options.KillGrace. A live status line is drawn only when the caller says
// the writer is a terminal; Options.Log receives every [Sample] as a JSON
// line.
//
// nvidia-smi's per-process figure is what the estimate calls the device
// peak: the CUDA context plus everything the caching allocator reserved
// plus other libraries' memory.
//
// # The synthetic probe
//
// [RunSynthetic] writes [SyntheticScript] (a PyTorch program embedded in
// the binary), the model's config.json and the job as JSON to a temporary
// directory and runs
//
//	python3 -u probe.py --config config.json --job job.json --warmup 2 --steps 3 --device 0
//
// under [Run]. The script builds the model from the config with random
// weights directly on the GPU (the transformers class named by
// architectures[0], created under torch.device), applies the job — dtype,
// AMP when the weights are fp32, LoRA or DoRA through peft, QLoRA by
// replacing every Linear but the head with a bitsandbytes Linear4bit,
// gradient checkpointing, attention implementation, optimizer by its
// Hugging Face name, torch.compile — and runs warm-up and measured steps on
// random tokens: forward, loss, backward and optimizer step for training
// (gradient accumulation included; LLaVA-style models get random images
// in front of the text), model.generate for inference (greedy, exactly
// gen_len tokens, with transformers' dynamic cache or, with
// --cache-implementation static, its static cache left uncompiled). It
// needs torch >= 2.0 with CUDA, transformers (4.x or 5.x), and peft or
// bitsandbytes when the job uses them. Serving is not probed this way:
// probe the engine itself as a command.
//
// # The result line (schema gpumem-probe/1)
//
// The script prints exactly one JSON object on one line of stdout, also
// when it fails; everything else goes to stderr. [ParseSyntheticOutput]
// takes the last stdout line that is a JSON object with a "schema" key and
// decodes it into [SyntheticResult]. Byte counts are integers.
//
//	schema                "gpumem-probe/1"
//	ok                    true when the run completed
//	error_kind, error     on failure: missing_module (with "module"), no_cuda,
//	                      oom, bad_job, unsupported or exception
//	model                 the transformers class built
//	device                {index, name, capability, total_bytes,
//	                      cuda_free_bytes, cuda_total_bytes}: name from
//	                      torch.cuda.get_device_name, the last two from
//	                      torch.cuda.mem_get_info once the context exists
//	software              {python, torch, cuda, driver, transformers, peft,
//	                      accelerate, bitsandbytes, flash_attn, alloc_conf};
//	                      driver from NVML (nvidia-ml-py), else nvidia-smi
//	params                {total, trainable} as torch counts them (4-bit
//	                      weights count packed elements)
//	steps                 {warmup, measured}
//	applied               the options as applied (dtype, method, attn,
//	                      grad_checkpoint and its use_reentrant, optimizer,
//	                      batch, lengths, loss_phase, cache_implementation,
//	                      experts_implementation, images, ...)
//	allocated_peak_bytes  largest torch.cuda.max_memory_allocated over the
//	                      measured steps' phases
//	reserved_peak_bytes   largest torch.cuda.max_memory_reserved
//	device_peak_bytes     largest device figure read at phase ends
//	device_source         "nvidia-smi" (this PID's used_memory) or
//	                      "mem_get_info" (total − free of the whole device,
//	                      when nvidia-smi does not list the PID)
//	phases                [{name, allocated_peak_bytes, reserved_peak_bytes,
//	                      allocated_end_bytes, device_bytes}], names forward,
//	                      loss, backward, step (training) or prefill, decode
//	                      (inference); peak statistics are reset at the
//	                      start of each phase, so each peak is that phase's.
//	                      A forward pre-hook on the output layer ends the
//	                      forward and starts the loss (output layer, logit
//	                      transforms, cross-entropy), where the estimate
//	                      splits them; without the hook (torch.compile) the
//	                      forward phase includes the loss. The prefill ends
//	                      when generate has chosen the first token (a
//	                      stopping criterion that never stops).
//	components            [{name, bytes, how}]: cuda_context (device memory
//	                      after CUDA init minus reserved), weights
//	                      (memory_allocated after building, adapters
//	                      included), activations (allocated after forward
//	                      and loss minus before: saved tensors and the loss),
//	                      gradients (sum of .grad), optimizer_states (sum of
//	                      optimizer state tensors)
//	warnings              options the script could not apply as asked
//
// On an out-of-memory error ok is false, error_kind is "oom", and the
// peaks up to the failed allocation are filled in: [RunSynthetic] returns
// the result with an error wrapping [ErrOOM].
//
// # Comparing
//
// [Compare] sets an estimate's [memory.PerGPU] against a [Measured]: the
// three peaks, the phases (a measured forward phase that includes the
// loss is compared with the larger of the estimate's forward and loss
// phases; the measured backward with the larger of backward and
// backward_end) and the directly measured components, matched to the
// estimate's rows by name.
package probe
