"""Type stubs of the ``vgpu`` package: numpy arrays in, numpy arrays out."""

from typing import Any, Dict, Optional

import numpy as np
import numpy.typing as npt

from ._vgpu import CacheStats as CacheStats
from ._vgpu import VGPUError as VGPUError

__version__: str
__all__: list[str]

class VGPUCache:
    """Matrix multiplication through VGPU's persistent kernel cache."""

    def __init__(self, backend: Optional[str] = None) -> None: ...
    def matmul(self, a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.float32]: ...
    @property
    def stats(self) -> CacheStats: ...
    @property
    def backend(self) -> str: ...
    @property
    def adapter(self) -> Optional[Dict[str, str]]: ...
    @property
    def fallback_reason(self) -> Optional[str]: ...
