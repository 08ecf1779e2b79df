"""A stand-in for nvidia-ml-py: one GPU, the driver version of FAKE_NVML_DRIVER."""
import os
import types


def nvmlInit():
    pass


def nvmlShutdown():
    pass


def nvmlSystemGetDriverVersion():
    return os.environ.get("FAKE_NVML_DRIVER") or "580.65.06"


def nvmlDeviceGetCount():
    return 1


def nvmlDeviceGetHandleByIndex(i):
    return i


def nvmlDeviceGetName(h):
    return os.environ.get("FAKE_GPU_NAME") or "NVIDIA H100 80GB HBM3"


def nvmlDeviceGetMemoryInfo(h):
    total = int(os.environ.get("FAKE_NVML_TOTAL_BYTES") or os.environ.get("FAKE_TORCH_TOTAL_BYTES") or 80 << 30)
    return types.SimpleNamespace(total=total, free=total, used=0)
