"""A stand-in for transformers (5.x spellings): configs read from
config.json, one toy causal LM for every architecture name, generate with
stopping criteria. See ../README.md."""
import functools
import json
import os
import types

import torch
from torch import Tensor, nn

__version__ = "5.0.0+fake"


class Config(types.SimpleNamespace):
    def get_text_config(self):
        return getattr(self, "text_config", None) or self


def _config(d):
    c = Config(**{k: _config(v) if isinstance(v, dict) else v for k, v in d.items()})
    return c


class AutoConfig:
    @staticmethod
    def from_pretrained(path):
        with open(os.path.join(path, "config.json")) as f:
            d = json.load(f)
        if "model_type" not in d:
            raise ValueError("Unrecognized model in %s: no model_type" % path)
        c = _config(d)
        tc = c.get_text_config()
        c.vocab_size = getattr(c, "vocab_size", None) or getattr(tc, "vocab_size", None)
        return c


class StoppingCriteria:
    pass


class StoppingCriteriaList(list):
    def __call__(self, input_ids, scores):
        out = None
        for c in self:
            if not isinstance(c, StoppingCriteria):
                raise TypeError("stopping criteria must subclass StoppingCriteria")
            out = c(input_ids, scores)
        return out


def _checkpoint(fn, *args, use_reentrant=True):
    return fn(*args)


class Output(types.SimpleNamespace):
    pass


class Layer(nn.Module):
    def __init__(self, h, inter):
        super().__init__()
        self.q_proj = nn.Linear(h, h)
        self.v_proj = nn.Linear(h, h)
        self.mlp = nn.Linear(h, inter)


class ToyCausalLM(nn.Module):
    """Embedding, layers of q/v projections and an MLP, an output layer."""

    def __init__(self, config, dtype=None, attn_implementation=None):
        super().__init__()
        tc = config.get_text_config()
        self.config = config
        config._attn_implementation = attn_implementation
        h = getattr(tc, "hidden_size", 4096)
        inter = getattr(tc, "intermediate_size", 4 * h)
        self.vocab, self.hidden = config.vocab_size, h
        self.embed_tokens = nn.Module()
        self.embed_tokens.param("weight", (self.vocab, h), dtype)
        self.layers = nn.Module()
        for i in range(getattr(tc, "num_hidden_layers", 32)):
            setattr(self.layers, str(i), Layer(h, inter))
        self.lm_head = nn.Linear(h, self.vocab, dtype=dtype)
        self.generation_config = types.SimpleNamespace(pad_token_id=None, eos_token_id=[2])
        self.ckpt = False

    @classmethod
    def _from_config(cls, config, dtype=None, attn_implementation=None, **kwargs):
        if kwargs:
            raise TypeError("unexpected arguments %s" % sorted(kwargs))
        return cls(config, dtype=dtype, attn_implementation=attn_implementation)

    def get_output_embeddings(self):
        return self.lm_head

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        kw = gradient_checkpointing_kwargs or {"use_reentrant": True}
        self.ckpt = True
        for m in self.layers.modules():
            m._gradient_checkpointing_func = functools.partial(_checkpoint, **kw)

    def enable_input_require_grads(self):
        pass

    def forward(self, input_ids=None, labels=None, use_cache=None, pixel_values=None, past_key_values=None, **kw):
        if os.environ.get("FAKE_TORCH_CRASH"):
            raise RuntimeError("fake forward failed on purpose")
        if os.environ.get("FAKE_TORCH_EXIT"):
            os._exit(int(os.environ["FAKE_TORCH_EXIT"]))  # dies without a result line, as a segfault would
        torch._sleep()
        b, s = input_ids.shape
        dt = self.lm_head.weight.dtype
        layers = len(self.layers.named_children())
        # saved activations: far fewer under checkpointing
        saved = [Tensor((b, s, self.hidden), dt) for _ in range(layers if not self.ckpt else 1)]
        hidden = Tensor((b, s, self.hidden), dt)
        logits = self.lm_head(hidden)
        out = Output(logits=logits, past_key_values=None, loss=None)
        if labels is not None and self.training:
            loss = Tensor((1,), torch.float32)
            upcast = logits.float()  # the cross-entropy's fp32 copy, saved for backward
            params = [p for p in self.parameters() if p.requires_grad]

            def backward():
                keep = [saved, upcast]
                for p in params:
                    if p.grad is None:
                        p.grad = Tensor(p.shape, p.dtype)
                keep.clear()
                saved.clear()
            loss._backward = backward
            out.loss = loss
        return out

    def generate(self, input_ids=None, max_new_tokens=1, min_new_tokens=0, do_sample=False,
                 stopping_criteria=None, pad_token_id=None, cache_implementation=None,
                 disable_compile=None, pixel_values=None, attention_mask=None, **kw):
        if kw:
            raise ValueError("The following `model_kwargs` are not used by the model: %s" % sorted(kw))
        b, s = input_ids.shape
        dt = self.lm_head.weight.dtype
        layers = len(self.layers.named_children())
        total = s + max_new_tokens
        cache = [Tensor((b, total if cache_implementation == "static" else s, self.hidden), dt) for _ in range(layers)]
        ids = input_ids
        for i in range(max_new_tokens):
            torch._sleep()
            logits = Tensor((b, 1, self.vocab), torch.float32)
            if cache_implementation != "static" and i > 0:
                cache = [Tensor((b, s + i, self.hidden), dt) for _ in range(layers)]
            ids = torch.cat([ids, logits.argmax(-1)], dim=1)
            if stopping_criteria is not None:
                stopping_criteria(ids, logits)
            del logits
        del cache
        return ids

    def can_generate(self):
        return True


def __getattr__(name):
    if name.endswith(("ForCausalLM", "ForConditionalGeneration")):
        return type(name, (ToyCausalLM,), {})
    raise AttributeError(name)


from . import optimization  # noqa: E402,F401
