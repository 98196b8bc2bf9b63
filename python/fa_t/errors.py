"""Exceptions raised by fa_t beyond the built-in ValueError/TypeError family."""


class ManifestError(ValueError):
    """A kernel manifest (``<name>.json``) does not follow docs/kernel-abi.md."""


class LayoutError(ValueError):
    """A tensor's strides or data pointer break a rule of the kernels' memory
    access: TMA's 16-byte strides and alignment for Q, K and V, the 16-byte
    row segments of O, the 4-byte LSE stores. The custom op copies such
    inputs instead (:func:`fa_t.torch_ops.attention_forward`)."""


class KernelNotFoundError(LookupError):
    """No ahead-of-time kernel matches a configuration and none can be compiled."""


class CompileError(RuntimeError):
    """``fa-t-opt`` failed, or produced output that is not a usable kernel."""


class CudaError(RuntimeError):
    """The fa-t runtime library (or the CUDA driver behind it) reported a failure.

    The message is the runtime's, e.g.
    ``cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)``.
    """
