"""Which GPUs a build can run: SASS for compute capability X.Y runs on X.Z for Z >= Y
(not on another major version, and an arch-specific `9.0a` only on 9.0 itself);
PTX for X.Y is compiled by the driver for any capability >= X.Y."""

from __future__ import annotations

import torch


def _parse(arch: str) -> tuple[int, int, bool, bool]:
    """'8.6' / '9.0+PTX' / '9.0a' -> (major, minor, ptx, arch_specific)."""
    ptx = arch.endswith("+PTX")
    bare = arch.removesuffix("+PTX")
    specific = bare.endswith("a")
    major, minor = bare.removesuffix("a").split(".")
    return int(major), int(minor), ptx, specific


def runnable(archs: list[str], capability: tuple[int, int]) -> bool:
    for arch in archs:
        major, minor, ptx, specific = _parse(arch)
        if specific:
            if (major, minor) == capability:
                return True
            continue
        if major == capability[0] and minor <= capability[1]:
            return True
        if ptx and (major, minor) <= capability:
            return True
    return False


def check_devices(archs: list[str]) -> None:
    for i in range(torch.cuda.device_count()):
        capability = torch.cuda.get_device_capability(i)
        if not runnable(archs, capability):
            name = torch.cuda.get_device_name(i)
            raise ImportError(
                f"opforge's CUDA kernels were compiled for {' '.join(archs)}, which cannot run on "
                f"cuda:{i} ({name}, compute capability {capability[0]}.{capability[1]}); rebuild with "
                f"TORCH_CUDA_ARCH_LIST='{capability[0]}.{capability[1]}' (or add '+PTX' to the newest arch)"
            )
