"""Type stubs of the ``vgpu`` package: numpy arrays in, numpy arrays out."""

import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

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

class VGPU:
    """VGPU's field engine: kernels as vector fields, launches as ensemble integrations."""

    def __init__(self) -> None: ...
    def demos(
        self,
        *,
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
        source_or_path: Union[str, os.PathLike[str]],
        *,
        n: int,
        t: Tuple[float, float] = ...,
        dt: float,
        method: str = ...,
        params: Optional[Mapping[str, Any]] = ...,
        backend: str = ...,
        block: Optional[int] = ...,
        threads: Optional[int] = ...,
        return_fluxes: bool = ...,
    ) -> Any: ...
    def ptx_case(
        self, path: Union[str, os.PathLike[str]], *, check: bool = ..., parallel: bool = ...
    ) -> Dict[str, Any]: ...
