#!/usr/bin/env python3
"""Synthetic GPU memory probe of gpumem.

Builds a model from a config.json with random weights directly on the GPU,
applies a gpumem job (dtype, LoRA/QLoRA via peft, gradient checkpointing,
attention implementation, optimizer), runs warm-up and measured steps, and
prints ONE JSON line on stdout (schema "gpumem-probe/1", documented in the
probe package). Everything else goes to stderr.

Usage: probe.py --config DIR/config.json --job job.json [--warmup 2] [--steps 3] [--device 0]
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


def apply_method(torch, model, job, dev, applied, warnings):
    method = method_of(job)
    applied["method"] = method
    gc = (job.get("grad_checkpoint") or "none").lower()
    if gc not in ("none", "false", ""):
        if gc != "full":
            warnings.append("grad_checkpoint %r: transformers checkpoints whole layers; used full" % gc)
        model.gradient_checkpointing_enable()
        applied["grad_checkpoint"] = "full"
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
    if name in ("sgd",):
        return torch.optim.SGD(params, lr=lr)
    if name == "adafactor":
        transformers = need("transformers", "Adafactor")
        return transformers.Adafactor(params, lr=lr, scale_parameter=False, relative_step=False, warmup_init=False)
    if name in BNB_OPTIMIZERS:
        bnb = need("bitsandbytes", "8-bit and paged optimizers")
        return getattr(bnb.optim, BNB_OPTIMIZERS[name])(params, lr=lr)
    raise ProbeError("unsupported", "optimizer %r: the probe knows adamw_torch, adamw_torch_fused, adamw_hf, sgd, adafactor and bitsandbytes 8-bit/paged optimizers" % name)


def text_vocab(config):
    v = getattr(config, "vocab_size", None)
    if not v and hasattr(config, "get_text_config"):
        v = config.get_text_config().vocab_size
    if not v:
        raise ProbeError("unsupported", "config has no vocab_size")
    return v


# ---------------------------------------------------------------- runs

def train(torch, model, config, job, dev, args, tracker, result, applied, warnings):
    b = job.get("per_device_batch") or 1
    s = job.get("seq_len")
    if not s:
        raise ProbeError("bad_job", "seq_len is required for a training probe")
    accum = job.get("grad_accum") or 1
    applied.update(per_device_batch=b, seq_len=s, grad_accum=accum)
    if job.get("images_per_sample"):
        warnings.append("images are not fed: the probe runs the text path only")
    ids = torch.randint(0, text_vocab(config), (b, s), device=dev)
    inputs = {"input_ids": ids, "labels": ids}
    if applied["architecture"].endswith("ForSequenceClassification"):
        inputs["labels"] = torch.zeros(b, dtype=torch.long, device=dev)
    weights_dtype = DTYPES.get((job.get("dtype") or "bf16").lower())
    compute = (job.get("compute_dtype") or "bf16").lower()
    amp = weights_dtype == "float32" and compute in ("bf16", "fp16")
    applied["autocast"] = compute if amp else "none"
    amp_dtype = getattr(torch, DTYPES[compute]) if amp else None
    model.train()
    # Fine-tuning scripts turn the KV cache off for training (transformers
    # does so itself under gradient checkpointing); a cache would hold
    # every layer's keys and values until the forward's output is dropped.
    if getattr(model, "config", None) is not None:  # not every model takes use_cache as an argument
        model.config.use_cache = False
    applied["use_cache"] = False
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(torch, params, job, applied)
    comps = {}
    for step in range(args.warmup + args.steps):
        measured = step >= args.warmup
        log("step %d/%d%s" % (step + 1, args.warmup + args.steps, "" if measured else " (warm-up)"))
        for _ in range(accum):
            tracker.begin()
            before = torch.cuda.memory_allocated(dev)
            with torch.autocast("cuda", dtype=amp_dtype, enabled=amp):
                loss = model(**inputs).loss / accum
            tracker.end("forward", measured)
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
        {"name": "activations", "bytes": comps["activations"], "how": "memory_allocated after forward minus before it: tensors saved for backward and the loss, last micro-batch"},
        {"name": "gradients", "bytes": comps["gradients"], "how": "sum of .grad tensors after backward"},
        {"name": "optimizer_states", "bytes": comps["optimizer_states"], "how": "sum of optimizer state tensors after step"},
    ]


def infer(torch, model, config, job, dev, args, tracker, result, applied, warnings):
    b = job.get("batch") or job.get("per_device_batch") or 1
    prompt = job.get("prompt_len") or job.get("seq_len")
    gen = job.get("gen_len") or 0
    if not prompt:
        raise ProbeError("bad_job", "prompt_len (or seq_len) is required for an inference probe")
    applied.update(batch=b, prompt_len=prompt, gen_len=gen)
    ids = torch.randint(0, text_vocab(config), (b, prompt), device=dev)
    model.eval()
    with torch.no_grad():
        for step in range(args.warmup + args.steps):
            measured = step >= args.warmup
            tracker.begin()
            out = model(input_ids=ids, use_cache=gen > 0)
            tracker.end("prefill", measured)
            if gen == 0:
                del out
                continue
            past = out.past_key_values
            tok = out.logits[:, -1:].argmax(-1)
            del out
            tracker.begin()
            for _ in range(gen):
                out = model(input_ids=tok, past_key_values=past, use_cache=True)
                past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
                del out
            tracker.end("decode", measured)
            del past, tok


def check_dependencies(job, mode):
    """Fails before the model is built when a package the job needs is missing."""
    if mode != "train":
        return
    method = method_of(job)
    if method in ("lora", "qlora"):
        need("peft", "LoRA adapters")
    if method == "qlora":
        need("bitsandbytes", "4-bit QLoRA layers")
    if (job.get("optimizer") or "").lower() in BNB_OPTIMIZERS:
        need("bitsandbytes", "8-bit and paged optimizers")


def software(torch, transformers):
    sw = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda or "",
          "transformers": transformers.__version__,
          "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}
    for mod in ("peft", "bitsandbytes", "flash_attn"):
        m = sys.modules.get(mod)
        if m is not None:
            sw[mod] = getattr(m, "__version__", "")
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=30).stdout.splitlines()[0].strip()
        if driver.replace(".", "").isdigit():
            sw["driver"] = driver
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return sw


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
    props = torch.cuda.get_device_properties(dev)
    result["device"] = {"index": args.device, "name": props.name, "capability": "%d.%d" % (props.major, props.minor),
                        "total_bytes": props.total_memory}
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
        infer(torch, model, config, job, dev, args, tracker, result, applied, warnings)
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
