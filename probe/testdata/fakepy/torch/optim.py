"""torch.optim of the stand-in torch: optimizers whose state is fake tensors."""
from . import Tensor


class Optimizer:
    slots = 0

    def __init__(self, params, lr=1e-3, **kwargs):
        self.params = list(params)
        self.state = {}
        self.kwargs = kwargs

    def step(self):
        for p in self.params:
            if p.grad is None or id(p) in self.state:
                continue
            self.state[id(p)] = {"s%d" % i: Tensor(p.shape, p.dtype) for i in range(self.slots)}

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None


class AdamW(Optimizer):
    slots = 2


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, **kwargs):
        super().__init__(params, lr, **kwargs)
        self.slots = 1 if momentum else 0
