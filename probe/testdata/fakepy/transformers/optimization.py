"""transformers.optimization of the stand-in: Adafactor with one small
state tensor per parameter."""
from torch import optim


class Adafactor(optim.Optimizer):
    slots = 1
