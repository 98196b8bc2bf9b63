"""A duck-typed stand-in for torch.Tensor: enough for fa_t's checks, params and
plan cache.

It has a shape, strides (in elements), an element size, a dtype printed as
torch prints it (and equal to torch's dtype of that name), a device and a
data pointer; no storage: the in-place fills it gets are recorded in ``ops``.
Devices and dtypes hash, as torch's do, so fakes can key the plan cache.
"""

import math


class FakeDevice:
    def __init__(self, kind="cuda", index=0):
        self.type, self.index = kind, index

    def __eq__(self, other):
        return (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        return f"{self.type}:{self.index}" if self.index is not None else self.type


class FakeDtype:
    SIZES = {"torch.bfloat16": 2, "torch.float16": 2, "torch.float32": 4}

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return str(other) == self.name

    def __hash__(self):
        return hash(self.name)

    def __str__(self):
        return self.name

    __repr__ = __str__


BF16, F16, F32 = FakeDtype("torch.bfloat16"), FakeDtype("torch.float16"), FakeDtype("torch.float32")


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


class FakeTensor:
    def __init__(self, shape, dtype=BF16, strides=None, ptr=0x7F0000000000,
                 device=None):
        self.shape = tuple(shape)
        self._strides = tuple(strides) if strides is not None else contiguous_strides(shape)
        self.dtype = dtype
        self._ptr = ptr
        self.device = device or FakeDevice()
        self.requires_grad = False
        self.ops = []

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def dim(self):
        return len(self.shape)

    def size(self, dim):
        return self.shape[dim]

    def numel(self):
        return math.prod(self.shape)

    def element_size(self):
        return FakeDtype.SIZES[self.dtype.name]

    def data_ptr(self):
        return self._ptr

    def is_contiguous(self):
        return all(self._strides[d] == c for d, c in enumerate(contiguous_strides(self.shape))
                   if self.shape[d] > 1)

    def zero_(self):
        self.ops.append("zero_")
        return self

    def fill_(self, value):
        self.ops.append(("fill_", value))
        return self

    def transpose(self, a, b):
        shape, strides = list(self.shape), list(self._strides)
        shape[a], shape[b] = shape[b], shape[a]
        strides[a], strides[b] = strides[b], strides[a]
        return FakeTensor(shape, self.dtype, strides, self._ptr, self.device)
