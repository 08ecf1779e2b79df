#!/usr/bin/env python3
"""Synthetic GPU memory probe of gpumem.

Builds a model from a config.json with random weights directly on the GPU,
applies a gpumem job (dtype, LoRA/QLoRA via peft, gradient checkpointing,
attention implementation, optimizer), runs warm-up and measured steps, and
prints ONE JSON line on stdout (schema "gpumem-probe/1", documented in the
probe package). Everything else goes to stderr.

Usage: probe.py --config DIR/config.json --job job.json [--warmup 2] [--steps 3] [--device 0]
                [--cache-implementation dynamic|static]

It runs with transformers 4.x and 5.x: where an API changed (torch_dtype
became dtype in 4.56, generate compiles a static cache's decode unless told
not to, the Adafactor import), it tries the current spelling first and
records in "applied" what it used.
"""
import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import traceback

SCHEMA = "gpumem-probe/1"
MIB = 1 << 20


class ProbeError(Exception):
    """A failure with a kind gpumem maps to advice (missing_module, no_cuda, bad_job, unsupported)."""

    def __init__(self, kind, message, **extra):
        super().__init__(message)
        self.kind = kind
        self.extra = extra


def need(module, purpose):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ProbeError("missing_module", "cannot import %s (%s): %s" % (module, purpose, e), module=module)


def log(msg):
    print("gpumem-probe: " + msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- job options

DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
ATTN = {"": "sdpa", "sdpa": "sdpa", "eager": "eager", "flash": "flash_attention_2"}


def job_dtype(torch, name, default="bf16"):
    key = (name or default).lower()
    if key not in DTYPES:
        raise ProbeError("unsupported", "dtype %r: the probe builds fp32, fp16 or bf16 models (4-bit via method qlora)" % name)
    return getattr(torch, DTYPES[key])


def method_of(job):
    return (job.get("method") or "full").lower()


# ---------------------------------------------------------------- device memory

def own_device_bytes(pid):
    """This process's memory on all GPUs as nvidia-smi reports it, or None."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    total, seen = 0, False
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid) and parts[1].isdigit():
            total += int(parts[1]) * MIB
            seen = True
    return total if seen else None


class DeviceReader:
    """Reads the device figure: nvidia-smi for this PID, else mem_get_info (whole device)."""

    def __init__(self, torch, dev):
        self.torch, self.dev, self.pid = torch, dev, os.getpid()
        self.source = "nvidia-smi" if own_device_bytes(self.pid) is not None else "mem_get_info"

    def read(self):
        if self.source == "nvidia-smi":
            v = own_device_bytes(self.pid)
            if v is not None:
                return v
        free, total = self.torch.cuda.mem_get_info(self.dev)
        return total - free


class Tracker:
    """Per-phase peaks: peak stats are reset before a phase and read after it."""

    def __init__(self, torch, dev, reader):
        self.torch, self.dev, self.reader = torch, dev, reader
        self.phases = {}
        self.start = 0

    def begin(self):
        self.torch.cuda.synchronize(self.dev)
        self.torch.cuda.reset_peak_memory_stats(self.dev)
        self.start = self.torch.cuda.memory_allocated(self.dev)

    def end(self, name, measured):
        cuda = self.torch.cuda
        cuda.synchronize(self.dev)
        if not measured:
            return
        p = self.phases.setdefault(name, {"name": name, "allocated_peak_bytes": 0, "reserved_peak_bytes": 0,
                                          "allocated_end_bytes": 0, "device_bytes": 0})
        p["allocated_peak_bytes"] = max(p["allocated_peak_bytes"], cuda.max_memory_allocated(self.dev))
        p["reserved_peak_bytes"] = max(p["reserved_peak_bytes"], cuda.max_memory_reserved(self.dev))
        p["allocated_end_bytes"] = max(p["allocated_end_bytes"], cuda.memory_allocated(self.dev))
        p["device_bytes"] = max(p["device_bytes"], self.reader.read())

    def fill(self, result, oom=False):
        phases = list(self.phases.values())
        result["phases"] = phases
        a = max([p["allocated_peak_bytes"] for p in phases] or [0])
        r = max([p["reserved_peak_bytes"] for p in phases] or [0])
        d = max([p["device_bytes"] for p in phases] or [0])
        if oom:  # the peak up to the failed allocation
            a = max(a, self.torch.cuda.max_memory_allocated(self.dev))
            r = max(r, self.torch.cuda.max_memory_reserved(self.dev))
            d = max(d, self.reader.read())
        result["allocated_peak_bytes"], result["reserved_peak_bytes"], result["device_peak_bytes"] = a, r, d
        result["device_source"] = self.reader.source


def unique_bytes(tensors):
    seen, total = set(), 0
    for t in tensors:
        if t is None or not t.is_cuda:
            continue
        key = (t.data_ptr(), t.numel())
        if key in seen:
            continue
        seen.add(key)
        total += t.numel() * t.element_size()
    return total


# ---------------------------------------------------------------- model

def build_model(torch, transformers, config_path, job, dev, dtype, applied, warnings):
    try:
        config = transformers.AutoConfig.from_pretrained(os.path.dirname(os.path.abspath(config_path)))
    except (ValueError, KeyError, OSError) as e:  # e.g. a model_type that needs trust_remote_code
        raise ProbeError("unsupported", "transformers %s cannot read this config.json: %s" % (transformers.__version__, e))
    attn = ATTN.get((job.get("attn") or "").lower())
    if attn is None:
        raise ProbeError("bad_job", "attn %r: want eager, sdpa or flash" % job.get("attn"))
    applied["attn"] = attn
    if attn == "flash_attention_2":
        need("flash_attn", "FlashAttention-2 for attn flash")
    arch = (getattr(config, "architectures", None) or [None])[0]
    cls = getattr(transformers, arch, None) if arch else None
    if cls is None:
        warnings.append("architecture %r is not a transformers class; built AutoModelForCausalLM" % arch)
        cls = transformers.AutoModelForCausalLM
        make = lambda **kw: cls.from_config(config, **kw)
    else:
        make = lambda **kw: cls._from_config(config, **kw)
    applied["architecture"] = arch or cls.__name__
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(dev):
            try:
                model = make(attn_implementation=attn, dtype=dtype)
            except TypeError:  # transformers < 4.56 names it torch_dtype
                model = make(attn_implementation=attn, torch_dtype=dtype)
    finally:
        torch.set_default_dtype(previous)
    # What transformers made of the request: its attention dispatch and, in
    # transformers 5, the MoE experts kernel (grouped_mm, batched_mm or
    # eager), which changes what an MoE layer allocates.
    mc = getattr(model, "config", None)
    used = getattr(mc, "_attn_implementation", None)
    if used and used != attn:
        warnings.append("asked for attention %r, transformers set %r" % (attn, used))
        applied["attn"] = used
    experts = getattr(mc, "_experts_implementation", None)
    if experts:
        applied["experts_implementation"] = experts
    return model.to(dtype), config


def quantize_4bit(torch, bnb, model, job, compute_dtype, applied):
    """Replaces every Linear but the output head by a bitsandbytes Linear4bit."""
    quant_type = (job.get("quant_type") or "nf4").lower()
    double = job.get("double_quant")
    double = True if double is None else bool(double)
    applied.update(quant_type=quant_type, double_quant=double)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is not torch.nn.Linear or name in ("lm_head", "score", "classifier"):
                continue
            shape = dict(bias=child.bias is not None, compute_dtype=compute_dtype,
                         compress_statistics=double, quant_type=quant_type)
            try:  # on the meta device: no full-size CPU weight to allocate and initialise
                q = bnb.nn.Linear4bit(child.in_features, child.out_features, device="meta", **shape)
            except TypeError:  # bitsandbytes without the device argument
                q = bnb.nn.Linear4bit(child.in_features, child.out_features, **shape)
            q.weight = bnb.nn.Params4bit(child.weight.data, requires_grad=False,
                                         compress_statistics=double, quant_type=quant_type)
            if child.bias is not None:
                q.bias = torch.nn.Parameter(child.bias.data, requires_grad=False)
            setattr(parent, name, q.to(child.weight.device))
            del child
    torch.cuda.empty_cache()


def checkpoint_reentrant(model):
    """The use_reentrant setting transformers gave torch.utils.checkpoint
    (its default changed across versions), or None when it cannot be read."""
    for m in model.modules():
        fn = getattr(m, "_gradient_checkpointing_func", None)
        keywords = getattr(fn, "keywords", None)
        if isinstance(keywords, dict) and "use_reentrant" in keywords:
            return bool(keywords["use_reentrant"])
    return None


def apply_method(torch, model, job, dev, applied, warnings):
    method = method_of(job)
    applied["method"] = method
    gc = (job.get("grad_checkpoint") or "none").lower()
    if gc not in ("none", "false", ""):
        if gc != "full":
            warnings.append("grad_checkpoint %r: transformers checkpoints whole layers; used full" % gc)
        model.gradient_checkpointing_enable()
        applied["grad_checkpoint"] = "full"
        reentrant = checkpoint_reentrant(model)
        if reentrant is not None:
            applied["grad_checkpoint_use_reentrant"] = reentrant
    else:
        applied["grad_checkpoint"] = "none"
    if method == "full":
        return model
    if method == "frozen":
        names = job.get("trainable") or []
        if not names:
            raise ProbeError("bad_job", "method frozen: list the trainable modules in trainable")
        patterns = trainable_patterns(names)
        for n, p in model.named_parameters():
            p.requires_grad_(any(pat in n for pat in patterns))
        if applied["grad_checkpoint"] == "full":
            model.enable_input_require_grads()
        return model
    if method not in ("lora", "qlora"):
        raise ProbeError("bad_job", "method %r: want full, lora, qlora or frozen" % method)
    peft = need("peft", "LoRA adapters")
    if method == "qlora":
        # Casts the unquantized parameters (norms, embeddings, head) to fp32
        # as in the QLoRA recipe. It enables checkpointing only for models
        # loaded quantized by from_pretrained, so that is done here.
        model = peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=applied["grad_checkpoint"] == "full")
    if applied["grad_checkpoint"] == "full":
        model.enable_input_require_grads()  # frozen embeddings: checkpointed layers need an input that requires grad
    targets = job.get("lora_target_modules") or None
    if targets == ["all-linear"]:
        targets = "all-linear"
    kw = dict(r=job.get("lora_rank") or 16, target_modules=targets, lora_dropout=job.get("lora_dropout") or 0.0)
    if job.get("lora_alpha"):
        kw["lora_alpha"] = job["lora_alpha"]
    variant = (job.get("peft_variant") or "lora").lower()
    if variant == "dora":
        kw["use_dora"] = True
    elif variant != "lora":
        raise ProbeError("unsupported", "peft_variant %r: the probe builds lora and dora" % variant)
    cfg = peft.LoraConfig(**kw)
    fp32_adapters = (job.get("adapter_dtype") or "fp32").lower() == "fp32"
    try:
        model = peft.get_peft_model(model, cfg, autocast_adapter_dtype=fp32_adapters)
    except TypeError:  # peft < 0.12 has no autocast_adapter_dtype and keeps the model dtype
        model = peft.get_peft_model(model, cfg)
        fp32_adapters = False
        warnings.append("this peft keeps adapters in the model dtype (no autocast_adapter_dtype)")
    applied.update(lora_rank=kw["r"], lora_target_modules=targets or "peft default",
                   adapter_dtype="fp32" if fp32_adapters else "model dtype")
    return model


# Hugging Face optim names of bitsandbytes optimizers and their classes.
BNB_OPTIMIZERS = {"adamw_bnb_8bit": "AdamW8bit", "adamw_8bit": "AdamW8bit", "paged_adamw_8bit": "PagedAdamW8bit",
                  "paged_adamw_32bit": "PagedAdamW32bit", "lion_8bit": "Lion8bit", "lion_32bit": "Lion32bit",
                  "paged_lion_8bit": "PagedLion8bit", "paged_lion_32bit": "PagedLion32bit"}


def trainable_patterns(names):
    """Expands gpumem's trainable list: module names match as substrings of
    parameter names, and "layers.A-B" stands for layers.A. ... layers.B."""
    out = []
    for name in names:
        head, _, rng = name.rpartition(".")
        lo, sep, hi = rng.partition("-")
        if sep and lo.isdigit() and hi.isdigit():
            out += ["%s.%d." % (head, i) for i in range(int(lo), int(hi) + 1)]
        else:
            out.append(name)
    return out


def make_optimizer(torch, params, job, applied):
    name = (job.get("optimizer") or "adamw_torch").lower()
    applied["optimizer"] = name
    lr = 1e-5
    if name in ("adamw_torch", "adamw"):
        return torch.optim.AdamW(params, lr=lr)  # foreach on CUDA by default
    if name == "adamw_torch_fused":
        return torch.optim.AdamW(params, lr=lr, fused=True)
    if name == "adamw_hf":
        return torch.optim.AdamW(params, lr=lr, foreach=False)  # a for-loop, as transformers' AdamW
    if name in ("sgd", "sgd_no_momentum"):
        return torch.optim.SGD(params, lr=lr)  # no momentum: no state
    if name in ("sgd_momentum", "momentum", "sgdm"):
        applied["momentum"] = 0.9
        return torch.optim.SGD(params, lr=lr, momentum=0.9)  # one momentum_buffer per parameter
    if name in ("nesterov", "sgd_nesterov"):
        applied["momentum"] = 0.9
        return torch.optim.SGD(params, lr=lr, momentum=0.9, nesterov=True)
    if name == "adafactor":
        # The HF optim "adafactor" is transformers' own Adafactor (factored
        # second moments), not torch.optim.Adafactor; both 4.x and 5.x
        # define it in transformers.optimization.
        opt = need("transformers.optimization", "Adafactor")
        return opt.Adafactor(params, lr=lr, scale_parameter=False, relative_step=False, warmup_init=False)
    if name in BNB_OPTIMIZERS:
        bnb = need("bitsandbytes", "8-bit and paged optimizers")
        return getattr(bnb.optim, BNB_OPTIMIZERS[name])(params, lr=lr)
    raise ProbeError("unsupported", "optimizer %r: the probe knows adamw_torch, adamw_torch_fused, adamw_hf, sgd, sgd_momentum, nesterov, adafactor and bitsandbytes 8-bit/paged optimizers" % name)


def text_vocab(config):
    v = getattr(config, "vocab_size", None)
    if not v and hasattr(config, "get_text_config"):
        v = config.get_text_config().vocab_size
    if not v:
        raise ProbeError("unsupported", "config has no vocab_size")
    return v


# ---------------------------------------------------------------- inputs

def image_token_id(config):
    """The placeholder token of a LLaVA-style config (image_token_index in
    transformers 4.x, also readable as image_token_id), or None."""
    for key in ("image_token_id", "image_token_index"):
        v = getattr(config, key, None)
        if isinstance(v, int):
            return v
    return None


def llava_image_tokens(config):
    """LLM tokens one image becomes in a LLaVA-style model: one per vision
    patch, the CLS position dropped unless vision_feature_select_strategy is
    "full" (transformers models/llava/modeling_llava.py get_image_features)."""
    vc = getattr(config, "vision_config", None)
    size, patch = getattr(vc, "image_size", None), getattr(vc, "patch_size", None)
    if not size or not patch:
        return None, None
    n = (size // patch) ** 2
    if getattr(config, "vision_feature_select_strategy", "default") == "full":
        n += 1
    return n, size


def make_inputs(torch, model_type, config, job, b, s, dev, dtype, applied):
    """Random token ids of b sequences of s text tokens, with the job's
    images in front of them for a LLaVA-style model. Labels ignore image
    positions, as a data collator does."""
    images = job.get("images_per_sample") or 0
    vocab = text_vocab(config)
    ids = torch.randint(0, vocab, (b, s), device=dev)
    img_tok = image_token_id(config)
    if img_tok is not None and img_tok < vocab:
        # a random text token equal to the image placeholder would count
        # as one more image position than there are image features
        ids = torch.where(ids == img_tok, torch.zeros_like(ids), ids)
    inputs = {"input_ids": ids}
    if not images:
        return inputs, ids
    per, size = llava_image_tokens(config)
    if model_type != "llava" or img_tok is None or per is None:
        raise ProbeError("unsupported", "images_per_sample: the probe feeds images to LLaVA-style models "
                         "(model_type llava) only, not %r; probe without images_per_sample to measure the text path" % model_type)
    if job.get("image_size") and job["image_size"] != size:
        raise ProbeError("unsupported", "image_size %d: the probe feeds images at the tower's native %d px" % (job["image_size"], size))
    place = torch.full((b, per * images), img_tok, dtype=ids.dtype, device=dev)
    ids = torch.cat([place, ids], dim=1)
    channels = getattr(config.vision_config, "num_channels", 3)
    inputs = {"input_ids": ids, "pixel_values": torch.randn(b * images, channels, size, size, device=dev, dtype=dtype)}
    labels = torch.where(ids == img_tok, torch.full_like(ids, -100), ids)
    applied.update(images_per_sample=images, image_tokens_per_image=per, image_size=size)
    return inputs, labels


# ---------------------------------------------------------------- runs

class LossPhase:
    """Splits a training forward into the estimate's forward and loss
    phases: a forward pre-hook on the output layer closes the forward
    (decoder layers and final norm) and opens the loss (output layer,
    logit transforms and cross-entropy, which transformers computes inside
    the model's forward when labels are given)."""

    def __init__(self, tracker):
        self.tracker, self.measured, self.fired = tracker, False, False

    def hook(self, module, args):
        if not self.fired:
            self.fired = True
            self.tracker.end("forward", self.measured)
            self.tracker.begin()


def output_layer(model):
    try:
        head = model.get_output_embeddings()
    except (AttributeError, NotImplementedError):
        return None
    return head if hasattr(head, "register_forward_pre_hook") else None


def train(torch, model, config, job, dev, args, tracker, result, applied, warnings):
    b = job.get("per_device_batch") or 1
    s = job.get("seq_len")
    if not s:
        raise ProbeError("bad_job", "seq_len is required for a training probe")
    accum = job.get("grad_accum") or 1
    applied.update(per_device_batch=b, seq_len=s, grad_accum=accum)
    weights_dtype = DTYPES.get((job.get("dtype") or "bf16").lower())
    compute = (job.get("compute_dtype") or "bf16").lower()
    amp = weights_dtype == "float32" and compute in ("bf16", "fp16")
    applied["autocast"] = compute if amp else "none"
    amp_dtype = getattr(torch, DTYPES[compute]) if amp else None
    pixel_dtype = amp_dtype or next(model.parameters()).dtype
    inputs, labels = make_inputs(torch, getattr(config, "model_type", ""), config, job, b, s, dev, pixel_dtype, applied)
    inputs["labels"] = labels
    if applied["architecture"].endswith("ForSequenceClassification"):
        inputs["labels"] = torch.zeros(b, dtype=torch.long, device=dev)
    model.train()
    # Fine-tuning scripts turn the KV cache off for training (transformers
    # does so itself under gradient checkpointing); a cache would hold
    # every layer's keys and values until the forward's output is dropped.
    # The flag goes to the forward too: a composite model (LLaVA) reads
    # use_cache from its text config, not from the top-level one.
    if getattr(model, "config", None) is not None:  # not every model takes use_cache as an argument
        model.config.use_cache = False
    inputs["use_cache"] = False
    applied["use_cache"] = False
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(torch, params, job, applied)
    split = LossPhase(tracker)
    head = output_layer(model)
    if job.get("torch_compile"):
        # torch.compile as the HF Trainer applies it (torch_compile=True):
        # the whole model, default backend and mode. A hook would break the
        # graph, so the loss stays in the forward phase.
        model = torch.compile(model)
        applied["torch_compile"] = True
        head = None
    if head is not None:
        head.register_forward_pre_hook(split.hook)
        applied["loss_phase"] = "output layer and loss, from the output layer's forward pre-hook"
    else:
        applied["loss_phase"] = "in forward"
    comps = {}
    for step in range(args.warmup + args.steps):
        measured = step >= args.warmup
        log("step %d/%d%s" % (step + 1, args.warmup + args.steps, "" if measured else " (warm-up)"))
        for _ in range(accum):
            tracker.begin()
            before = torch.cuda.memory_allocated(dev)
            split.measured, split.fired = measured, False
            with torch.autocast("cuda", dtype=amp_dtype, enabled=amp):
                loss = model(**inputs).loss / accum
            tracker.end("loss" if split.fired else "forward", measured)
            comps["activations"] = torch.cuda.memory_allocated(dev) - before
            tracker.begin()
            loss.backward()
            del loss
            tracker.end("backward", measured)
            comps["gradients"] = unique_bytes(p.grad for p in params)
        tracker.begin()
        opt.step()
        opt.zero_grad(set_to_none=True)
        tracker.end("step", measured)
        comps["optimizer_states"] = unique_bytes(
            t for st in opt.state.values() for t in st.values() if torch.is_tensor(t))
    result["components"] += [
        {"name": "activations", "bytes": comps["activations"], "how": "memory_allocated after forward and loss minus before them: tensors saved for backward and the loss, last micro-batch"},
        {"name": "gradients", "bytes": comps["gradients"], "how": "sum of .grad tensors after backward"},
        {"name": "optimizer_states", "bytes": comps["optimizer_states"], "how": "sum of optimizer state tensors after step"},
    ]


class PhaseAfterFirstToken:
    """A generate stopping criterion that never stops: called once the
    prefill's token is chosen, it closes the prefill phase and opens the
    decode phase (transformers calls stopping criteria after every token)."""

    def __init__(self, torch, tracker, measured):
        self.torch, self.tracker, self.measured, self.calls = torch, tracker, measured, 0

    def __call__(self, input_ids, scores, **kwargs):
        self.calls += 1
        if self.calls == 1:
            self.tracker.end("prefill", self.measured)
            self.tracker.begin()
        return self.torch.zeros(input_ids.shape[0], dtype=self.torch.bool, device=input_ids.device)


def phase_criterion(transformers):
    """PhaseAfterFirstToken as a subclass of transformers' StoppingCriteria
    where that class exists (generate merges criteria by type)."""
    base = getattr(transformers, "StoppingCriteria", None)
    if isinstance(base, type):
        return type("PhaseAfterFirstTokenCriteria", (PhaseAfterFirstToken, base), {})
    return PhaseAfterFirstToken


def generate(torch, transformers, model, inputs, gen, cache, criterion, applied, warnings):
    """model.generate of exactly gen greedy tokens (min_new_tokens keeps a
    random model's end-of-sequence token from stopping it early)."""
    kw = dict(max_new_tokens=gen, min_new_tokens=gen, do_sample=False,
              stopping_criteria=transformers.StoppingCriteriaList([criterion]))
    gc = getattr(model, "generation_config", None)
    if getattr(gc, "pad_token_id", None) is None:
        eos = getattr(gc, "eos_token_id", None)
        kw["pad_token_id"] = (eos[0] if isinstance(eos, (list, tuple)) and eos else eos) if eos is not None else 0
    if cache == "static":
        kw["cache_implementation"] = "static"
        # transformers (4.48+) compiles the decode step of a static cache on
        # CUDA unless generation_config.disable_compile is set
        # (generation/utils.py _valid_auto_compile_criteria); the probe
        # measures the eager cache.
        kw["disable_compile"] = True
    try:
        return model.generate(**inputs, **kw)
    except ValueError as e:
        if "disable_compile" not in str(e):
            raise
        kw.pop("disable_compile")
        warnings.append("this transformers has no disable_compile: a static cache may have been compiled")
        applied["generate_compile"] = "not disabled"
        return model.generate(**inputs, **kw)


def infer(torch, transformers, model, config, job, dev, args, tracker, result, applied, warnings):
    b = job.get("batch") or job.get("per_device_batch") or 1
    prompt = job.get("prompt_len") or job.get("seq_len")
    gen = job.get("gen_len") or 0
    if not prompt:
        raise ProbeError("bad_job", "prompt_len (or seq_len) is required for an inference probe")
    if job.get("no_kv_cache"):
        raise ProbeError("unsupported", "no_kv_cache: the probe generates with a KV cache")
    cache = args.cache_implementation
    applied.update(batch=b, prompt_len=prompt, gen_len=gen)
    dtype = next(model.parameters()).dtype
    inputs, _ = make_inputs(torch, getattr(config, "model_type", ""), config, job, b, prompt, dev, dtype, applied)
    if gen > 0:
        # every position is real: without a mask generate warns, and with
        # pad == eos it may infer one from the random tokens
        inputs["attention_mask"] = torch.ones_like(inputs["input_ids"])
    model.eval()
    if gen > 0:
        applied.update(generate="model.generate, greedy", cache_implementation=cache)
        if cache == "static":
            applied["generate_compile"] = "disabled"
    else:
        applied["generate"] = "one forward (gen_len 0)"
    with torch.no_grad():
        for step in range(args.warmup + args.steps):
            measured = step >= args.warmup
            log("step %d/%d%s" % (step + 1, args.warmup + args.steps, "" if measured else " (warm-up)"))
            tracker.begin()
            if gen == 0:
                out = model(**inputs, use_cache=False)
                del out
                tracker.end("prefill", measured)
                continue
            criterion = phase_criterion(transformers)(torch, tracker, measured)
            out = generate(torch, transformers, model, inputs, gen, cache, criterion, applied, warnings)
            tracker.end("decode" if criterion.calls > 1 else "prefill", measured)
            if criterion.calls < gen:
                warnings.append("generate chose %d tokens, not %d" % (criterion.calls, gen))
            del out


def check_dependencies(job, mode):
    """Fails before the model is built when a package the job needs is missing."""
    if (job.get("attn") or "").lower() == "flash":
        need("flash_attn", "FlashAttention-2 for attn flash")
    if mode != "train":
        return
    method = method_of(job)
    if method in ("lora", "qlora"):
        need("peft", "LoRA adapters")
    if method == "qlora":
        need("bitsandbytes", "4-bit QLoRA layers")
    if (job.get("optimizer") or "").lower() in BNB_OPTIMIZERS:
        need("bitsandbytes", "8-bit and paged optimizers")


def package_version(dist):
    """A package's installed version from its metadata, without importing it."""
    try:
        from importlib import metadata
        return metadata.version(dist)
    except Exception:  # noqa: BLE001 - not installed, or metadata unreadable
        return ""


def driver_version():
    """The NVIDIA driver version from NVML (nvidia-ml-py), else nvidia-smi,
    else ""; NVML creates no CUDA context."""
    try:
        import pynvml
        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:  # noqa: BLE001 - no nvidia-ml-py, or NVML cannot start
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.splitlines()[0].strip()
        if out.replace(".", "").isdigit():
            return out
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return ""


def software(torch, transformers):
    sw = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda or "",
          "transformers": transformers.__version__,
          "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}
    for mod in ("peft", "bitsandbytes", "flash_attn"):
        m = sys.modules.get(mod)
        if m is not None:
            sw[mod] = getattr(m, "__version__", "")
    if "peft" not in sw and package_version("peft"):
        sw["peft"] = package_version("peft")
    if package_version("accelerate"):
        sw["accelerate"] = package_version("accelerate")
    driver = driver_version()
    if driver:
        sw["driver"] = driver
    return sw


def device_info(torch, dev, index):
    """The GPU as CUDA sees it: its name, compute capability, total memory,
    and the free and total memory cudaMemGetInfo reports once this
    process's CUDA context exists."""
    props = torch.cuda.get_device_properties(dev)
    free, total = torch.cuda.mem_get_info(dev)
    return {"index": index, "name": torch.cuda.get_device_name(dev),
            "capability": "%d.%d" % (props.major, props.minor), "total_bytes": props.total_memory,
            "cuda_free_bytes": free, "cuda_total_bytes": total}


def run(args, result, state):
    torch = need("torch", "PyTorch")
    transformers = need("transformers", "model classes")
    major = int(torch.__version__.split(".")[0])
    if major < 2:
        raise ProbeError("unsupported", "torch %s: the probe needs torch >= 2.0 (it builds the model directly on the GPU)" % torch.__version__)
    if not torch.cuda.is_available():
        raise ProbeError("no_cuda", "torch.cuda.is_available() is False: CPU-only PyTorch build, no NVIDIA driver, or no visible GPU")
    with open(args.job) as f:
        job = json.load(f)
    mode = (job.get("mode") or "train").lower()
    check_dependencies(job, mode)
    if mode == "serving":
        raise ProbeError("unsupported", "serving runs are measured on the engine itself: gpumem probe -- vllm serve ...")
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    torch.zeros(1, device=dev)  # create the CUDA context
    reader = DeviceReader(torch, dev)
    tracker = Tracker(torch, dev, reader)
    state["tracker"] = tracker
    result["device"] = device_info(torch, dev, args.device)
    result["software"] = software(torch, transformers)
    torch.cuda.synchronize(dev)
    context = reader.read() - torch.cuda.memory_reserved(dev)
    result["components"].append({"name": "cuda_context", "bytes": max(context, 0),
                                 "how": "device memory of the process after CUDA init minus memory_reserved (%s)" % reader.source})
    applied, warnings = result["applied"], result["warnings"]
    method = method_of(job)
    if method == "qlora":
        bnb = need("bitsandbytes", "4-bit QLoRA layers")
        compute = job_dtype(torch, job.get("compute_dtype"), "bf16")
        model, config = build_model(torch, transformers, args.config, job, dev, compute, applied, warnings)
        quantize_4bit(torch, bnb, model, job, compute, applied)
        applied["dtype"] = "4bit/" + DTYPES[(job.get("compute_dtype") or "bf16").lower()]
    else:
        dtype = job_dtype(torch, job.get("dtype"), "bf16")
        model, config = build_model(torch, transformers, args.config, job, dev, dtype, applied, warnings)
        applied["dtype"] = DTYPES[(job.get("dtype") or "bf16").lower()]
    base = torch.cuda.memory_allocated(dev)
    if mode == "train":
        model = apply_method(torch, model, job, dev, applied, warnings)
    params = list(model.parameters())
    result["params"] = {"total": sum(p.numel() for p in params),
                        "trainable": sum(p.numel() for p in params if p.requires_grad)}
    result["components"].append({"name": "weights", "bytes": torch.cuda.memory_allocated(dev),
                                 "how": "memory_allocated after building the model: parameters, buffers%s" % (
                                     " and adapters" if method in ("lora", "qlora") else "")})
    if base > torch.cuda.memory_allocated(dev):
        warnings.append("preparing the model freed memory (upcasts or quantization)")
    result["model"] = applied.get("architecture", "")
    result["steps"] = {"warmup": args.warmup, "measured": args.steps}
    torch.cuda.reset_peak_memory_stats(dev)
    if mode == "train":
        train(torch, model, config, job, dev, args, tracker, result, applied, warnings)
    elif mode == "inference":
        infer(torch, transformers, model, config, job, dev, args, tracker, result, applied, warnings)
    else:
        raise ProbeError("bad_job", "mode %r: want train or inference" % mode)
    tracker.fill(result)


def parse_args(argv):
    p = argparse.ArgumentParser(description="gpumem synthetic memory probe")
    p.add_argument("--config", required=True, help="path to config.json")
    p.add_argument("--job", required=True, help="path to the gpumem job JSON")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--cache-implementation", choices=("dynamic", "static"), default="dynamic",
                   help="KV cache of generate for inference jobs (transformers DynamicCache or StaticCache)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    result = {"ok": False, "phases": [], "components": [], "applied": {}, "warnings": []}
    state = {}
    try:
        run(args, result, state)
        result["ok"] = True
    except ProbeError as e:
        result.update(error_kind=e.kind, error=str(e), **e.extra)
    except Exception as e:  # noqa: BLE001 - every failure must still print the result line
        oom = type(e).__name__ == "OutOfMemoryError" or "out of memory" in str(e).lower()
        result.update(error_kind="oom" if oom else "exception",
                      error=("%s: %s" % (type(e).__name__, e)).splitlines()[0][:2000])
        traceback.print_exc(file=sys.stderr)
        if oom and "tracker" in state:
            try:
                state["tracker"].fill(result, oom=True)
            except Exception:  # noqa: BLE001
                pass
    result["schema"] = SCHEMA
    sys.stdout.write(json.dumps(result, separators=(",", ":"), sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0 if result["ok"] else 3


if __name__ == "__main__":
    sys.exit(main())
