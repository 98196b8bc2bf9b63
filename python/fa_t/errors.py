"""Exceptions raised by fa_t beyond the built-in ValueError/TypeError family."""


class ManifestError(ValueError):
    """A kernel manifest (``<name>.json``) does not follow docs/kernel-abi.md."""


class KernelNotFoundError(LookupError):
    """No ahead-of-time kernel matches a configuration and none can be compiled."""


class CompileError(RuntimeError):
    """``fa-t-opt`` failed, or produced output that is not a usable kernel."""


class CudaError(RuntimeError):
    """The fa-t runtime library (or the CUDA driver behind it) reported a failure.

    The message is the runtime's, e.g.
    ``cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)``.
    """
