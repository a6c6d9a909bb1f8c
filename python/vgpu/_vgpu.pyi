"""Type stubs of the compiled extension ``vgpu._vgpu``.

The package ``vgpu`` (``vgpu/__init__.py``) wraps these classes in typed Python
(converting array-likes to C-contiguous float32); its annotations and docstrings
are the user-facing stubs, so there is no separate ``__init__.pyi`` to keep in step.
"""

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

__version__: str

class VGPUError(Exception):
    """Any VGPU failure that is not a bad shape or dtype; the message is the Rust error's."""

class CacheStats:
    """Counters of a cache since its creation."""

    @property
    def compiles(self) -> int: ...
    @property
    def cache_hits(self) -> int: ...
    @property
    def gpu_dispatches(self) -> int: ...
    @property
    def cpu_fallbacks(self) -> int: ...
    @property
    def bytes_uploaded(self) -> int: ...
    @property
    def bytes_downloaded(self) -> int: ...
    @property
    def compile_seconds(self) -> float: ...
    def to_dict(self) -> Dict[str, float]: ...

class VgpuCache:
    """The Rust ``VgpuCache``; takes only C-contiguous 2-D float32 arrays."""

    def __init__(self, backend: Optional[str] = None) -> None: ...
    def matmul(
        self, a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """``a @ b`` for (m, k) and (k, n) matrices."""
    def relu(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """``max(x, 0)`` element-wise, any shape (NaN stays NaN)."""
    def bias_add(
        self, x: npt.NDArray[np.float32], bias: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """``x + bias`` for an (m, n) matrix and an (n,) bias."""
    def softmax(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Softmax of each row of an (m, n) matrix."""
    def matmul_bias_relu(
        self,
        a: npt.NDArray[np.float32],
        w: npt.NDArray[np.float32],
        bias: npt.NDArray[np.float32],
    ) -> npt.NDArray[np.float32]:
        """``max(a @ w + bias, 0)``, the epilogue fused into the matmul kernel."""
    @property
    def stats(self) -> CacheStats: ...
    @property
    def backend(self) -> str: ...
    @property
    def adapter(self) -> Optional[Dict[str, str]]: ...
    @property
    def fallback_reason(self) -> Optional[str]: ...

class VGPU:
    """The field engine."""

    def __init__(self) -> None: ...
    def demos(
        self,
        n: Optional[int] = None,
        mat: Optional[Tuple[int, int, int]] = None,
        block: Optional[int] = None,
        method: Optional[str] = None,
        dt: Optional[float] = None,
        t_end: Optional[float] = None,
        scale: Optional[float] = None,
        threads: Optional[int] = None,
        seed: Optional[int] = None,
    ) -> List[Dict[str, Any]]: ...
    def ensemble(
        self,
        source: str,
        file: str,
        n: int,
        t: Tuple[float, float],
        dt: float,
        method: str = ...,
        params: Optional[Dict[str, Any]] = ...,
        backend: Optional[str] = ...,
        block: Optional[int] = ...,
        threads: Optional[int] = ...,
        shard: Optional[Tuple[int, int]] = ...,
    ) -> Tuple[np.ndarray, Dict[str, np.ndarray], str]: ...
    def ensemble_adaptive(
        self,
        source: str,
        file: str,
        n: int,
        tspan: List[float],
        method: str,
        rtol: List[float],
        atol: List[float],
        dt0: Optional[float] = ...,
        dtmin: Optional[float] = ...,
        dtmax: Optional[float] = ...,
        maxiters: Optional[int] = ...,
        saveat: Optional[List[float]] = ...,
        u0: Optional[List[float]] = ...,
        params: Optional[Dict[str, Any]] = ...,
        backend: Optional[str] = ...,
        threads: Optional[int] = ...,
        shard: Optional[Tuple[int, int]] = ...,
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def ptx_case(
        self,
        path: str,
        check: bool = ...,
        parallel: bool = ...,
        initcheck: bool = ...,
        backend: Optional[str] = ...,
        racecheck: bool = ...,
    ) -> Dict[str, Any]: ...

def merge(shards: List[str], out: str) -> Dict[str, Any]: ...
