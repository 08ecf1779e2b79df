package memory

// The resolved job of a training estimate (Result.Job and Result.Assumed):
// the caller's job with every setting the set-up chose a value for
// filled in, so that the output states what was estimated. Estimating the
// resolved job again gives the same figures (a test checks it); only the
// band, which widens for settings left to defaults, reads Result.Assumed
// to tell them apart.

// attnNames are the Job.Attention spellings of the resolved attention.
var attnNames = [...]string{trAttnSDPA: "sdpa", trAttnFlash: "flash", trAttnEager: "eager"}

// lossNames are the Job.FusedLoss spellings that select each loss; ""
// where none does (litgpt's chunked head follows from its framework).
var lossNames = [...]string{lossHF: "none", lossLitGPTChunked: "", lossLiger: "liger", lossChunked: "chunked",
	lossChunkedCompiled: "chunked-compiled", lossNone: "none"}

// resolvedTrainingJob writes the job as the set-up resolved it to dst
// and the settings it filled to a. The strings are constants or the
// set-up's own; the pointers point into box. Nothing is allocated, so an
// [Estimator] stays allocation-free.
func (s *setup) resolvedTrainingJob(dst *Job, a *KeySet, box *trainBox) {
	*dst = *s.job
	*a = KeySet{}
	j := dst
	if j.Mode == "" {
		j.Mode = Train // the zero value's documented meaning, which every title names: not listed as assumed
	}
	fillString(&j.Dtype, s.weight.Name, keyDtype, a)
	fillString(&j.MasterWeights, cond(s.master, "fp32", "none"), keyMaster, a)
	fillString(&j.ComputeDtype, s.compute.Name, keyCompute, a)
	fillString(&j.Optimizer, s.opt.info.Name, keyOptimizer, a)
	fillInt(&j.MicroBatch, s.batch, keyMicroBatch, a)
	fillInt(&j.GradAccum, s.accum, keyGradAccum, a)
	fillInt(&j.SeqLen, s.seq, keySeqLen, a)
	if j.Packed == nil {
		box.packed = s.packed
		j.Packed = &box.packed
		a.add(keyPacked)
	}
	fillString(&j.Attention, attnNames[s.attn], keyAttention, a)
	if j.GradCheckpoint == "" {
		// Unstated checkpointing is none, or full for QLoRA (resolveCheckpointing).
		j.GradCheckpoint = cond(s.ckpt == ckptFull, "full", "none")
		a.add(keyGradCkpt)
	}
	fillString(&j.FusedLoss, lossNames[s.loss], keyFusedLoss, a)
	fillString(&j.Framework, s.framework, keyFramework, a)
	fillString(&j.Method, s.method, keyMethod, a)
	if s.method == MethodLoRA || s.method == MethodQLoRA {
		if v := s.lora.variant; s.lora.rank > 0 && v != VariantIA3 && !promptLearning(v) {
			// IA3, prompt learning and OFT by block size have no rank.
			fillInt(&j.LoRARank, s.lora.rank, keyLoRARank, a)
		}
		if len(j.LoRATargets) == 0 && len(s.lora.targets) > 0 {
			// The targets the estimate used: PEFT's default for the
			// method (LoRA's q_proj,v_proj, IA3's per model type).
			j.LoRATargets = s.lora.targets
			a.add(keyLoRATargets)
		}
		if len(j.FeedforwardModules) == 0 && len(s.lora.ff) > 0 {
			j.FeedforwardModules = s.lora.ff
			a.add(keyFeedforward)
		}
		fillString(&j.AdapterDtype, s.adapter.Name, keyAdapterDtype, a)
	}
	if s.weight.Quantized {
		if s.method == MethodQLoRA {
			fillString(&j.QuantType, s.weight.Name, keyQuantType, a)
		}
		if j.DoubleQuant == nil {
			box.double = s.double
			j.DoubleQuant = &box.double
			a.add(keyDoubleQuant)
		}
	}
	s.resolvedLayout(j, a)
	s.resolvedLoading(j, a, box)
	if j.GPU != "" || j.GPUMemory > 0 {
		fillString(&j.DecideOn, DecideUpper, keyDecideOn, a)
	}
}

// resolvedLayout fills the parallel layout: the GPU count, the engine
// a multi-GPU job without one runs (DDP), the parallel sizes, the FSDP
// strategy, offload and the pipeline schedule.
func (s *setup) resolvedLayout(j *Job, a *KeySet) {
	d := &s.dist
	fillInt(&j.NumGPUs, d.world, keyNumGPUs, a)
	fillInt(&j.Nodes, d.nodes, keyNodes, a)
	if d.single {
		return
	}
	fillString(&j.Engine, d.engine, keyEngine, a)
	fillInt(&j.DP, d.dp, keyDP, a)
	fillInt(&j.TP, d.tp, keyTP, a)
	fillInt(&j.PP, d.pp, keyPP, a)
	fillInt(&j.CP, d.cp, keyCP, a)
	fillInt(&j.EP, d.ep, keyEP, a)
	if s.isFSDP() {
		fillString(&j.FSDPStrategy, "full_shard", keyFSDPStrategy, a)
	}
	if d.engine == EngineDeepSpeed || s.isFSDP() {
		fillString(&j.OffloadOptimizer, cond(d.offloadOpt == "", "none", d.offloadOpt), keyOffloadOpt, a)
		fillString(&j.OffloadParams, cond(d.offloadParams == "", "none", d.offloadParams), keyOffloadParams, a)
	}
	if d.pp > 1 {
		fillString(&j.PipelineSchedule, d.schedule, keySchedule, a)
	}
}

// fillString sets *v to x and adds k to a when *v is empty and x is not.
func fillString(v *string, x string, k keyID, a *KeySet) {
	if *v == "" && x != "" {
		*v = x
		a.add(k)
	}
}

// fillInt sets *v to x and adds k to a when *v is 0 and x is not.
func fillInt(v *int, x int, k keyID, a *KeySet) {
	if *v == 0 && x != 0 {
		*v = x
		a.add(k)
	}
}

// resolvedInferenceJob is the job of an inference or serving estimate as
// resolveInference read it: the weights' dtype, the KV cache dtype, the
// attention, the engine, the batch, the prompt when none was given, the
// images of a VLM and the parallel sizes; the settings it filled are
// added to a.
func (in *inferenceInputs) resolvedInferenceJob(job Job, a *KeySet) Job {
	j := job
	fillString(&j.Dtype, in.act.Name, keyDtype, a)
	fillString(&j.KVCacheDtype, in.kv.Name, keyKVDtype, a)
	fillString(&j.Attention, in.attn, keyAttention, a)
	fillString(&j.InferenceEngine, in.engine, keyInferEngine, a)
	if j.Mode == Inference {
		fillInt(&j.Batch, int(in.batch), keyBatch, a)
		if job.PromptLen == 0 && job.GenLen == 0 && job.SeqLen == 0 {
			fillInt(&j.PromptLen, int(in.prompt), keyPromptLen, a)
		}
	}
	if in.images > 0 {
		fillInt(&j.ImagesPerSample, int(in.images), keyImages, a)
	}
	fillInt(&j.TP, in.tp, keyTP, a)
	fillInt(&j.PP, in.pp, keyPP, a)
	fillInt(&j.EP, in.ep, keyEP, a)
	if j.GPU != "" || j.GPUMemory > 0 {
		fillString(&j.DecideOn, DecideUpper, keyDecideOn, a)
	}
	return j
}

// resolvedServingJob fills the vLLM settings of a serving result from
// the engine's figures: max_model_len, gpu_memory_utilization,
// max_num_seqs, max_num_batched_tokens and block_size.
func resolvedServingJob(r *Result) {
	s := r.Serving
	if s == nil {
		return
	}
	j, a := &r.Job, &r.Assumed
	fillInt(&j.MaxModelLen, s.MaxModelLen, keyMaxModelLen, a)
	if j.GPUMemoryUtilization == 0 && s.GPUMemoryUtilization > 0 {
		j.GPUMemoryUtilization = s.GPUMemoryUtilization
		a.add(keyGPUUtil)
	}
	fillInt(&j.MaxNumSeqs, s.MaxNumSeqs, keyMaxNumSeqs, a)
	fillInt(&j.MaxNumBatchedTokens, s.MaxNumBatchedTokens, keyMaxBatchTokens, a)
	fillInt(&j.BlockSize, s.BlockSize, keyBlockSize, a)
}
