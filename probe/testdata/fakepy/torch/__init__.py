"""A stand-in for torch: a toy CUDA allocator and just the API the probe
script calls. See ../README.md. Byte counts are consistent, not real."""
import contextlib
import math
import os
import time as _time
import types

__version__ = "2.11.0+fake"
version = types.SimpleNamespace(cuda="12.8")

MIB = 1 << 20


class dtype:
    def __init__(self, name, itemsize, floating=True):
        self.name, self.itemsize, self.is_floating_point = name, itemsize, floating

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32", 4)
float16 = dtype("float16", 2)
bfloat16 = dtype("bfloat16", 2)
long = dtype("int64", 8, False)
bool = dtype("bool", 1, False)  # noqa: A001 - torch's name
_default = [float32]


def get_default_dtype():
    return _default[0]


def set_default_dtype(d):
    _default[0] = d


class OutOfMemoryError(RuntimeError):
    pass


class _Allocator:
    def __init__(self):
        self.total = int(os.environ.get("FAKE_TORCH_TOTAL_BYTES") or 80 << 30)
        self.context = 500 * MIB
        self.allocated = self.peak = self.reserved = self.peak_reserved = 0
        self.next_ptr = 1

    def alloc(self, n):
        if self.context + self.reserved_for(self.allocated + n) > self.total:
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes (fake allocator)" % n)
        self.allocated += n
        self.peak = max(self.peak, self.allocated)
        self.reserved = max(self.reserved, self.reserved_for(self.allocated))
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        self.next_ptr += max(n, 1)
        return self.next_ptr

    def free(self, n):
        self.allocated -= n

    @staticmethod
    def reserved_for(n):
        return -(-n // (2 * MIB)) * 2 * MIB


_alloc = _Allocator()


def _size(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


class Size(tuple):
    pass


class Tensor:
    """A tensor is its shape, dtype and bytes on the fake device."""

    def __init__(self, shape, dt=None, requires_grad=False, on_device=True):
        self.shape = Size(int(d) for d in shape)
        self.dtype = dt or get_default_dtype()
        self.requires_grad = requires_grad
        self.grad = None
        self.is_cuda = on_device
        self.device = device("cuda", 0) if on_device else device("cpu")
        self._nbytes = self.numel() * self.dtype.itemsize if on_device else 0
        self._ptr = _alloc.alloc(self._nbytes) if on_device else 0

    def __del__(self):
        if getattr(self, "_nbytes", 0):
            _alloc.free(self._nbytes)
            self._nbytes = 0

    def numel(self):
        return math.prod(self.shape)

    def element_size(self):
        return self.dtype.itemsize

    def data_ptr(self):
        return self._ptr

    def dim(self):
        return len(self.shape)

    def to(self, *args, **kwargs):
        d = kwargs.get("dtype") or next((a for a in args if isinstance(a, dtype)), None)
        return Tensor(self.shape, d) if d is not None and d is not self.dtype else self

    def float(self):
        return self.to(float32)

    def __eq__(self, other):
        return Tensor(self.shape, bool)

    __hash__ = object.__hash__

    def __truediv__(self, other):
        return self

    def __getitem__(self, idx):
        return Tensor(self.shape[:-1] + (1,), self.dtype)

    def argmax(self, dim=-1):
        return Tensor(self.shape[:-1], long)

    def requires_grad_(self, flag=True):
        self.requires_grad = flag
        return self

    @property
    def data(self):
        return self

    def backward(self):
        fn = getattr(self, "_backward", None)
        if fn is not None:
            fn()


def is_tensor(x):
    return isinstance(x, Tensor)


def _make(size, dtype=None, device=None, **_):
    return Tensor(_size(size), dtype)


def zeros(*size, dtype=None, device=None, **kw):
    return Tensor(_size(size), dtype)


def randn(*size, dtype=None, device=None, **kw):
    return Tensor(_size(size), dtype)


def randint(low, high, size, device=None, **kw):
    return Tensor(size, long)


def full(size, value, dtype=None, device=None, **kw):
    return Tensor(size, dtype or long)


def full_like(t, value, **kw):
    return Tensor(t.shape, t.dtype)


def ones_like(t, **kw):
    return Tensor(t.shape, t.dtype)


def zeros_like(t, **kw):
    return Tensor(t.shape, t.dtype)


def where(cond, a, b):
    return Tensor(a.shape, a.dtype)


def cat(tensors, dim=0):
    shape = list(tensors[0].shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    return Tensor(shape, tensors[0].dtype)


class device:
    def __init__(self, kind, index=None):
        self.type, self.index = kind, index

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@contextlib.contextmanager
def autocast(device_type, dtype=None, enabled=True):
    yield


@contextlib.contextmanager
def no_grad():
    yield


def compile(model, **kwargs):  # noqa: A001 - torch's name
    return model


def _sleep():
    t = float(os.environ.get("FAKE_TORCH_SLEEP") or 0)
    if t > 0:
        _time.sleep(t)


from . import cuda, nn, optim  # noqa: E402,F401 - submodules after the core
