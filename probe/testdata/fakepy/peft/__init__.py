"""A stand-in for peft: LoRA freezes the base model and adds two small
matrices per targeted layer."""
from torch import float32

__version__ = "0.18.0+fake"


class LoraConfig:
    def __init__(self, r=8, target_modules=None, lora_dropout=0.0, lora_alpha=8, use_dora=False):
        self.r, self.target_modules = r, target_modules or ["q_proj", "v_proj"]


def get_peft_model(model, cfg, autocast_adapter_dtype=True):
    for p in model.parameters():
        p.requires_grad_(False)
    targets = cfg.target_modules
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            hit = targets == "all-linear" or name in targets
            if hit and hasattr(child, "in_features"):
                dt = float32 if autocast_adapter_dtype else child.weight.dtype
                child.param("lora_A", (cfg.r, child.in_features), dt)
                child.param("lora_B", (child.out_features, cfg.r), dt)
    return model


def prepare_model_for_kbit_training(model, use_gradient_checkpointing=True):
    return model
