"""torch.cuda of the stand-in torch: statistics of its toy allocator."""
import os
import types

from . import OutOfMemoryError, _alloc  # noqa: F401 - torch.cuda.OutOfMemoryError


def is_available():
    return not os.environ.get("FAKE_TORCH_NO_CUDA")


def set_device(dev):
    pass


def synchronize(dev=None):
    pass


def reset_peak_memory_stats(dev=None):
    _alloc.peak = _alloc.allocated
    _alloc.peak_reserved = _alloc.reserved


def memory_allocated(dev=None):
    return _alloc.allocated


def max_memory_allocated(dev=None):
    return _alloc.peak


def memory_reserved(dev=None):
    return _alloc.reserved


def max_memory_reserved(dev=None):
    return _alloc.peak_reserved


def empty_cache():
    _alloc.reserved = _alloc.reserved_for(_alloc.allocated)


def mem_get_info(dev=None):
    used = _alloc.context + _alloc.reserved
    return _alloc.total - used, _alloc.total


def get_device_name(dev=None):
    return os.environ.get("FAKE_GPU_NAME") or "NVIDIA H100 80GB HBM3"


def get_device_properties(dev=None):
    return types.SimpleNamespace(name=get_device_name(dev), major=9, minor=0, total_memory=_alloc.total)
