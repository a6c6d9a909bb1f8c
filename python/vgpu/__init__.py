"""VGPU from Python: numpy arrays in, numpy arrays out.

VGPU is a virtual GPU written in Rust where every kernel is a vector field and
every launch integrates one trajectory per thread. This package exposes it to
numpy users:

* :class:`VGPUCache` -- matrix multiplication and fused kernels (``relu``,
  ``bias_add``, row-wise ``softmax``, ``matmul_bias_relu``) through VGPU's
  persistent kernel cache (each kernel compiled once, reused afterwards), on the
  GPU through wgpu, or on the CPU when there is none (``VGPU_BACKEND=auto|gpu|cpu``).
* :class:`VGPU` -- the field engine: the equivalence demos (CUDA kernels written
  as vector fields, each checked against what the CUDA kernel computes) and
  ensembles of ``.field`` kernels (one trajectory per thread, numpy out).
* :class:`VGPUError` -- raised for every failure that is not a bad shape or dtype
  (those raise :class:`ValueError`); its message is the Rust error's.

Example::

    import numpy as np, vgpu
    cache = vgpu.VGPUCache()
    a = np.random.rand(64, 32).astype(np.float32)
    b = np.random.rand(32, 16).astype(np.float32)
    c = cache.matmul(a, b)          # == a @ b, within float32 rounding
    print(cache.stats)              # VGPUCache: 1 compiles, 0 cache hits, ...
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np

from . import _vgpu
from ._vgpu import CacheStats, VGPUError

__version__: str = _vgpu.__version__

__all__ = ["VGPU", "VGPUCache", "CacheStats", "VGPUError", "merge", "__version__"]

# dtype kinds VGPU converts to float32: bool, signed and unsigned integers, floats.
_REAL_KINDS = "biuf"


def _array(op: str, name: str, x: Any, ndim: Optional[int]) -> np.ndarray:
    """``x`` as a C-contiguous float32 array of ``ndim`` dimensions (any when
    ``None``), without a copy when it already is one.

    Real dtypes (float, int, bool) are converted to float32 and non-contiguous
    arrays copied; anything else raises ValueError naming ``op`` and ``name``.
    """
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{op}: {name} is not an array of numbers: {e}") from None
    if arr.dtype.kind not in _REAL_KINDS:
        raise ValueError(
            f"{op}: {name} has dtype {arr.dtype}; VGPU computes in float32 and "
            f"accepts real-valued arrays (float, int or bool dtypes)"
        )
    if ndim is not None and arr.ndim != ndim:
        what = {1: "a 1-D vector", 2: "a 2-D matrix"}.get(ndim, f"{ndim}-D")
        raise ValueError(f"{op}: {name} must be {what}, got shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float32)


def _matrix(op: str, name: str, x: Any) -> np.ndarray:
    """``x`` as a C-contiguous float32 matrix (see :func:`_array`)."""
    return _array(op, name, x, 2)


def _shard(shard: Any) -> Optional[Tuple[int, int]]:
    """``shard=(i, r)`` as two whole numbers (``None`` for the whole run)."""
    if shard is None:
        return None
    try:
        i, r = shard
        i, r = int(i), int(r)
    except (TypeError, ValueError):
        raise ValueError(f"ensemble: shard={shard!r}: expected (i, r), shard i of r (0-based)") from None
    if r < 1 or not 0 <= i < r:
        raise ValueError(f"ensemble: shard={shard!r}: expected 0 <= i < r")
    return (i, r)


class VGPUCache:
    """Matrix multiplication and fused kernels through VGPU's persistent kernel cache.

    Each distinct matmul shape compiles one kernel (the fused element-wise
    kernels and softmax compile once for every shape) on first use; later calls of that
    shape reuse it (a cache hit) and upload only the new data. Without a GPU
    adapter (or with ``backend="cpu"``) every call runs on the CPU GEMM and is
    counted as a CPU fallback.

    Args:
        backend: ``"auto"`` (a GPU when wgpu finds one, else the CPU), ``"gpu"``
            (no adapter is a :class:`VGPUError`) or ``"cpu"``. ``None`` reads the
            ``VGPU_BACKEND`` environment variable (default ``"auto"``).

    Inputs are 2-D arrays of a real dtype; they are converted to C-contiguous
    float32 (no copy when they already are), results are float32 arrays.
    The GIL is released while VGPU computes. One cache may be shared by threads;
    its calls then run one at a time.
    """

    __slots__ = ("_cache",)

    def __init__(self, backend: Optional[str] = None) -> None:
        self._cache = _vgpu.VgpuCache(backend)

    def matmul(self, a: Any, b: Any) -> np.ndarray:
        """``a @ b`` for an (m, k) and a (k, n) matrix, as an (m, n) float32 array.

        Raises:
            ValueError: a shape mismatch (the message names both shapes), an empty
                matrix, a non-2-D input or a non-real dtype.
            VGPUError: a GPU failure (compile, dispatch, device lost), or a matrix
                too large for the device with ``backend="gpu"``.
        """
        return self._cache.matmul(_matrix("matmul", "a", a), _matrix("matmul", "b", b))

    def relu(self, x: Any) -> np.ndarray:
        """``max(x, 0)`` element-wise, for an array of any shape (same shape out).

        A NaN stays NaN (as ``np.where(x < 0, 0, x)``). The kernel is generated
        from VGPU's kernel IR and compiled once, whatever the shape.

        Raises:
            ValueError: an empty array or a non-real dtype.
            VGPUError: a GPU failure.
        """
        return self._cache.relu(_array("relu", "x", x, None))

    def bias_add(self, x: Any, bias: Any) -> np.ndarray:
        """``x + bias`` for an (m, n) matrix and a bias of n values (one per column).

        Raises:
            ValueError: ``bias`` is not 1-D or its length is not n (the message
                names both shapes), an empty matrix, a non-real dtype.
            VGPUError: a GPU failure.
        """
        return self._cache.bias_add(
            _matrix("bias_add", "x", x), _array("bias_add", "bias", bias, 1)
        )

    def softmax(self, x: Any) -> np.ndarray:
        """Softmax of each row of an (m, n) matrix (``axis=-1``).

        One GPU trajectory per row integrates the online softmax over the
        columns (running maximum and rescaled sum), then an element-wise kernel
        normalises: two kernels, each compiled once. Large values do not
        overflow; ``-inf`` entries get 0; a row of only ``-inf``, or holding a
        NaN or ``+inf``, comes out NaN, as the textbook formula gives in numpy.
        Agrees with float64 numpy within about 1e-5 relative (``exp`` differs by
        a few ulp between GPU and CPU).

        Raises:
            ValueError: an empty matrix, a non-2-D input or a non-real dtype.
            VGPUError: a GPU failure.
        """
        return self._cache.softmax(_matrix("softmax", "x", x))

    def matmul_bias_relu(self, a: Any, w: Any, bias: Any) -> np.ndarray:
        """``max(a @ w + bias, 0)`` for an (m, k) and a (k, n) matrix and n bias
        values: one kernel per shape, the matmul with the bias and relu fused
        into its store (the epilogue is generated from VGPU's kernel IR).

        Raises:
            ValueError: a shape mismatch (inner dimensions, or the bias length
                against n: the message names the shapes), an empty matrix, a
                non-real dtype.
            VGPUError: a GPU failure.
        """
        op = "matmul_bias_relu"
        return self._cache.matmul_bias_relu(
            _matrix(op, "a", a), _matrix(op, "w", w), _array(op, "bias", bias, 1)
        )

    @property
    def stats(self) -> CacheStats:
        """Counters since creation: compiles, cache_hits, gpu_dispatches,
        cpu_fallbacks, bytes_uploaded, bytes_downloaded, compile_seconds
        (``.to_dict()`` gives them as a dict; ``str()`` the one-line summary)."""
        return self._cache.stats

    @property
    def backend(self) -> str:
        """Where the calls run now: ``"gpu"`` or ``"cpu"``."""
        return self._cache.backend

    @property
    def adapter(self) -> Optional[Dict[str, str]]:
        """The GPU adapter (``name``, ``backend``, ``device_type``, ``driver``), or
        ``None`` when the calls run on the CPU."""
        return self._cache.adapter

    @property
    def fallback_reason(self) -> Optional[str]:
        """Why the calls run on the CPU, or ``None`` when they run on the GPU."""
        return self._cache.fallback_reason

    def __repr__(self) -> str:
        return repr(self._cache)


_ADAPTIVE = ("tsit5", "dp5", "bs3", "vern7", "rosenbrock23")


def _over_comm(comm: Any, shard: Any, run: Any) -> Any:
    """``ensemble(..., comm=)``: this rank's shard, gathered to rank 0."""
    if shard is not None:
        raise ValueError("ensemble: give shard= or comm=, not both (comm= takes the shard from the communicator)")
    try:
        rank, size = int(comm.Get_rank()), int(comm.Get_size())
    except AttributeError:
        raise ValueError(
            f"ensemble: comm={comm!r}: expected an mpi4py communicator (Get_rank, Get_size, gather, bcast)"
        ) from None
    mine: Optional[BaseException] = None
    part: Any = None
    try:
        part = run((rank, size) if size > 1 else None)
    except Exception as e:  # reported to every rank below, then re-raised here
        mine = e
    why = None if mine is None else f"rank {rank} of {size}: {type(mine).__name__}: {mine}"
    gathered = comm.gather((part, why), root=0)
    failed = [w for _, w in gathered if w] if rank == 0 else None
    failed = comm.bcast(failed, root=0)
    if mine is not None:
        raise mine
    if failed:
        raise VGPUError("ensemble: " + "; ".join(failed))
    if rank != 0:
        return None
    parts = [p for p, _ in gathered]
    if size == 1:
        return parts[0]
    if isinstance(parts[0], tuple):
        return tuple(np.concatenate([p[j] for p in parts]) for j in range(len(parts[0])))
    return np.concatenate(parts)


def merge(shards: List[Union[str, "os.PathLike[str]"]], out: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """Joins the outputs of ``vgpu ensemble --shard I/R`` runs (each one's
    ``--out`` file or ``STEM.shard.json``, any order) into ``out`` and its
    companions (``STEM.status.npy``, ``STEM.steps.npy``): the bytes one run
    writes. The same function as ``vgpu merge``.

    Returns:
        ``{"trajectories": N, "shards": R, "files": [(path, shape), ...]}``.

    Raises:
        ValueError: shards of different runs, a shard given twice, a missing
            shard (named), a data file that does not match its metadata;
            nothing is written then and ``out`` is left as it was.
        VGPUError: a file that cannot be read or written.
    """
    return dict(_vgpu.merge([os.fspath(s) for s in shards], os.fspath(out)))


def _field_source(source_or_path: Union[str, "os.PathLike[str]"]) -> Tuple[str, str]:
    """(text, name for messages): a path-like, or a str without ``{`` (a file
    name), is read; any other str is ``.field`` source named ``<string>``."""
    if isinstance(source_or_path, os.PathLike) or (
        isinstance(source_or_path, str) and "{" not in source_or_path
    ):
        path = os.fspath(source_or_path)
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    if isinstance(source_or_path, str):
        return source_or_path, "<string>"
    raise TypeError(
        f"ensemble: expected .field source text or a path, got {type(source_or_path).__name__}"
    )


class VGPU:
    """VGPU's field engine: kernels as vector fields, launches as ensemble integrations."""

    __slots__ = ("_vgpu",)

    def __init__(self) -> None:
        self._vgpu = _vgpu.VGPU()

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
    ) -> List[Dict[str, Any]]:
        """Runs the equivalence demos: scale, matmul, relax, reverse, tree-sum and
        histogram, each a CUDA kernel written as a field and compared with the
        result the CUDA kernel computes.

        Args (each ``None`` keeps VGPU's default):
            n: elements of the 1-D demos (default 32768).
            mat: the matmul demo's (m, k, n).
            block: trajectories per block (at most 1024; a power of two for tree-sum).
            method: the relax demo's integrator, ``"rk4"`` or ``"euler"``.
            dt, t_end: the relax demo's step and end time.
            scale: the scale demo's factor.
            threads: CPU threads (``1`` sequential, ``0`` one per core); results
                are the same bits for any value.
            seed: seed of the inputs.

        Returns one dict per demo: ``name``, ``passed``, ``max_error``,
        ``tolerance`` (0 for bit-exact demos), ``trajectories``, ``steps``,
        ``seconds``, ``note``.

        Raises:
            ValueError: an unknown ``method``.
            VGPUError: invalid sizes (the message names the demo and the limit).
        """
        return self._vgpu.demos(
            n=n, mat=mat, block=block, method=method, dt=dt, t_end=t_end,
            scale=scale, threads=threads, seed=seed,
        )

    def ensemble(
        self,
        source_or_path: Union[str, "os.PathLike[str]"],
        *,
        n: int,
        t: Tuple[float, float] = (0.0, 1.0),
        dt: Optional[float] = None,
        method: str = "rk4",
        params: Optional[Mapping[str, Any]] = None,
        backend: Optional[str] = None,
        block: Optional[int] = None,
        threads: Optional[int] = None,
        return_fluxes: bool = False,
        rtol: Any = 1e-3,
        atol: Any = 1e-6,
        dt0: Optional[float] = None,
        dtmin: Optional[float] = None,
        dtmax: Optional[float] = None,
        maxiters: Optional[int] = None,
        saveat: Any = None,
        u0: Any = None,
        tspan: Any = None,
        return_status: bool = False,
        shard: Optional[Tuple[int, int]] = None,
        comm: Any = None,
    ) -> Any:
        """Integrates ``n`` trajectories of a ``.field`` kernel (CUDA's
        ``<<<grid, block>>>``: trajectory ``i`` is thread ``i``).

        Args:
            source_or_path: ``.field`` source text, or the path of a ``.field`` file
                (a ``str`` without ``{`` or any path-like).
            n: number of trajectories.
            t: the time span ``(t0, t1)``; it must be a whole number of steps.
                (Phased kernels -- barriers, shared sub-fields -- take their
                spans from the kernel.)
            dt: the step of the fixed-step methods (required for them; the
                adaptive methods choose their own steps: see ``dt0``).
            method: fixed-step ``"rk4"`` or ``"euler"``, or an adaptive
                embedded pair ``"tsit5"``, ``"dp5"``, ``"bs3"`` or ``"vern7"``
                (per-trajectory step sizes and PI control, for kernels
                without phases, on the CPU or the GPU as ``backend`` says;
                f64 fields on the GPU need SHADER_F64).
            params: the kernel's parameters by name: numbers for scalars, array-likes
                for buffers (1-D: pass a matrix as ``m.ravel()``; converted to the declared element
                type; integer buffers take only integer arrays).
            backend: ``None`` reads ``VGPU_BACKEND`` (default ``"auto"``), as
                ``vgpu ensemble`` does; ``"auto"`` (the GPU when wgpu finds an
                adapter and the kernel can run there -- f32, phased or not --
                else the CPU, counted as a fallback),
                ``"cpu"``, or ``"gpu"`` (no adapter, or a kernel the GPU cannot
                run, is a VGPUError). GPU runs return flux outputs too; float
                flux is summed in the GPU's order there, equal to the CPU's
                fixed-order sum to rounding.
            block: trajectories per block (default min(n, 256)).
            threads: CPU threads (``1`` sequential, ``0`` one per core); the
                results are the same bits for any value.
            return_fluxes: also return the flux outputs (``atomicAdd`` targets;
                fixed-step methods only).
            rtol, atol: adaptive methods: relative and absolute tolerances, a
                positive number or one per state (a sequence of ``dim``).
            dt0: adaptive: the first step (default: Hairer's estimate).
            dtmin, dtmax: adaptive: the smallest and largest step; a trajectory
                whose step falls below ``dtmin`` stops with status 2.
            maxiters: adaptive: most step attempts per trajectory (default
                100000); beyond it a trajectory stops with status 1.
            saveat: adaptive: save times (1-D, non-decreasing, inside every
                span), filled from the method's dense output.
            u0: adaptive: initial states, an ``(n, dim)`` array (default: the
                kernel's ``state x = ...`` initialisers).
            tspan: adaptive: a time span per trajectory, an ``(n, 2)`` array of
                ``(t0, t1)`` rows (instead of ``t``).
            return_status: adaptive: also return the per-trajectory status and
                step counts.
            shard: ``(i, r)``: integrate only shard ``i`` of ``r`` (0-based) --
                the rows ``[lo, hi)`` of the whole run, cut at whole blocks
                (adaptive: at trajectories) as ``vgpu ensemble --shard i/r``
                cuts them -- with the whole run's indices (``i``, ``n``,
                buffers, ``u0``/``tspan`` rows), so each row has the bits the
                whole run gives it. Returns the slice's arrays;
                ``numpy.concatenate`` of shards ``0..r`` in order is the whole
                run's array. On a cluster, run the CLI under ``mpirun`` (the
                ``mpi`` feature) or one ``--shard`` per job and ``vgpu merge``
                (docs/SCALING.md). Kernels with flux outputs are refused.
            comm: an mpi4py communicator (e.g. ``MPI.COMM_WORLD``): every rank
                runs ``shard=(comm.rank, comm.size)``, the slices are gathered
                to rank 0 (``comm.gather``), which returns the whole run's
                arrays (the same bits as one process); the other ranks return
                ``None``. A rank that fails makes every rank raise, naming it.
                Rank 0 holds the whole result: for outputs beyond one node's
                memory run ``mpirun ... vgpu ensemble --out`` (the CLI writes
                collectively). Not with ``shard``.

        Returns:
            The final states, an ``(n, number of states)`` array of the kernel's
            float type; with ``return_fluxes``, ``(states, {name: 1-D array})``.
            Adaptive methods: the final states ``(n, dim)``, or with ``saveat``
            the states at the save times ``(n, K, dim)`` (NaN where a failed
            trajectory did not get to); with ``return_status``,
            ``(values, status, steps)``: ``status`` an ``(n,)`` uint8 array (0
            success, 1 maxiters, 2 dtmin, 3 non-finite, 4 terminated),
            ``steps`` an ``(n, 2)`` uint64 array of accepted and rejected steps.
            A failed trajectory never raises: its status says what happened,
            its final state is its last accepted one.

        Raises:
            ValueError: bad ``n``, ``method``, ``backend``, or a parameter of the
                wrong type or dtype.
            VGPUError: a parse or type error in the source (``file:line:col``), a
                missing or unknown parameter, an out-of-bounds read (naming the
                buffer, the trajectory and the place), a state that became NaN or
                infinite, a span that is not a whole number of steps.
            OSError: the file cannot be read.
        """
        if comm is not None:
            return _over_comm(comm, shard, lambda s: self.ensemble(
                source_or_path, n=n, t=t, dt=dt, method=method, params=params,
                backend=backend, block=block, threads=threads,
                return_fluxes=return_fluxes, rtol=rtol, atol=atol, dt0=dt0,
                dtmin=dtmin, dtmax=dtmax, maxiters=maxiters, saveat=saveat,
                u0=u0, tspan=tspan, return_status=return_status, shard=s))
        text, name = _field_source(source_or_path)
        if len(t) != 2:
            raise ValueError(f"ensemble: t must be (t0, t1), got {t!r}")
        if str(method).lower() in _ADAPTIVE:
            return self._adaptive(
                text, name, n=n, t=t, dt=dt, method=method, params=params,
                backend=backend, block=block, threads=threads,
                return_fluxes=return_fluxes, rtol=rtol, atol=atol, dt0=dt0,
                dtmin=dtmin, dtmax=dtmax, maxiters=maxiters, saveat=saveat,
                u0=u0, tspan=tspan, return_status=return_status, shard=shard,
            )
        if str(method).lower() not in ("rk4", "euler"):
            raise ValueError(
                f"ensemble: method={method!r}: unknown method "
                "(expected euler or rk4, or an adaptive tsit5, dp5, bs3, vern7 or rosenbrock23)"
            )
        fixed_only = {"dt0": dt0, "dtmin": dtmin, "dtmax": dtmax, "maxiters": maxiters,
                      "saveat": saveat, "u0": u0, "tspan": tspan}
        for opt, value in fixed_only.items():
            if value is not None:
                raise ValueError(
                    f"ensemble: {opt} applies to the adaptive methods "
                    f"(tsit5, dp5, bs3, vern7), not to method={method!r}"
                )
        if return_status:
            raise ValueError(f"ensemble: return_status applies to the adaptive methods, not to method={method!r}")
        if dt is None:
            raise ValueError(f"ensemble: method={method!r} needs dt (the fixed step)")
        states, fluxes, _ran_on = self._vgpu.ensemble(
            text, name, int(n), (float(t[0]), float(t[1])), float(dt), method,
            dict(params or {}), backend, block, threads, _shard(shard),
        )
        return (states, fluxes) if return_fluxes else states

    def _adaptive(self, text: str, name: str, *, n: Any, t: Any, dt: Any, method: str,
                  params: Any, backend: Any, block: Any, threads: Any, return_fluxes: bool,
                  rtol: Any, atol: Any, dt0: Any, dtmin: Any, dtmax: Any, maxiters: Any,
                  saveat: Any, u0: Any, tspan: Any, return_status: bool,
                  shard: Any = None) -> Any:
        """The adaptive branch of :meth:`ensemble` (its arguments checked here)."""
        n = int(n)
        if dt is not None:
            raise ValueError(
                f"ensemble: dt is the step of the fixed-step methods; method={method!r} "
                "chooses its own steps (set the first with dt0)"
            )
        if return_fluxes:
            raise ValueError(f"ensemble: return_fluxes: method={method!r} runs fields without flux")
        if block is not None:
            raise ValueError(f"ensemble: block: method={method!r} runs each trajectory on its own")

        def tol(opt: str, x: Any) -> List[float]:
            a = np.atleast_1d(np.asarray(x, dtype=np.float64))
            if a.ndim != 1 or a.size == 0:
                raise ValueError(f"ensemble: {opt} must be a number or one per state, got shape {a.shape}")
            bad = a[~(np.isfinite(a) & (a > 0))]
            if bad.size:
                raise ValueError(f"ensemble: {opt}={x!r}: {bad[0]} is not a tolerance (positive and finite)")
            return [float(v) for v in a]

        def opt_float(opt: str, x: Any) -> Optional[float]:
            if x is None:
                return None
            v = float(x)
            if v != v:
                raise ValueError(f"ensemble: {opt} is NaN")
            return v

        if tspan is None:
            spans = [float(t[0]), float(t[1])]
        else:
            ts = np.asarray(tspan, dtype=np.float64)
            if ts.shape != (n, 2):
                raise ValueError(f"ensemble: tspan must have shape (n, 2) = ({n}, 2), got {ts.shape}")
            spans = [float(v) for v in ts.ravel()]
        u0_flat = None
        if u0 is not None:
            a = np.asarray(u0, dtype=np.float64)
            if a.ndim != 2 or a.shape[0] != n:
                raise ValueError(f"ensemble: u0 must have shape (n, dim) with n = {n}, got {a.shape}")
            u0_flat = [float(v) for v in a.ravel()]
        save = None
        if saveat is not None:
            sa = np.asarray(saveat, dtype=np.float64)
            if sa.ndim != 1:
                raise ValueError(f"ensemble: saveat must be 1-D, got shape {sa.shape}")
            save = [float(v) for v in sa]
        if maxiters is not None and int(maxiters) < 1:
            raise ValueError(f"ensemble: maxiters={maxiters!r} must be at least 1")
        values, status, steps = self._vgpu.ensemble_adaptive(
            text, name, n, spans, method, tol("rtol", rtol), tol("atol", atol),
            opt_float("dt0", dt0), opt_float("dtmin", dtmin), opt_float("dtmax", dtmax),
            None if maxiters is None else int(maxiters), save, u0_flat,
            dict(params or {}), backend, threads, _shard(shard),
        )
        return (values, status, steps) if return_status else values

    def ptx_case(
        self,
        path: Union[str, "os.PathLike[str]"],
        *,
        check: bool = True,
        parallel: bool = True,
        initcheck: bool = False,
        backend: Optional[str] = None,
        racecheck: bool = False,
    ) -> Dict[str, Any]:
        """Runs a PTX case -- real nvcc PTX with its inputs and expected outputs
        (a ``case.json``, or the folder holding one) -- on VGPU's SIMT field
        executor, and compares the outputs.

        Args:
            path: the ``case.json`` or its folder.
            check: run the checker (misaligned accesses, barrier divergence,
                shared-memory races, uninitialised reads).
            parallel: run blocks in parallel (the results are the same).
            initcheck: also report reads of global memory that neither the host
                initialised nor any thread wrote before (a buffer without
                ``init`` counts as allocated, not written); blocks then run one
                at a time in block order on the interpreter; on the GPU the
                checked kernel keeps a bit per byte of global memory).
            backend: ``"cpu"`` (the checked interpreter; the default, as
                ``vgpu ptx run``), ``"gpu"`` (the PTX compiled to WGSL and run
                through wgpu; an instruction it cannot run raises, naming it
                and its PTX line) or ``"auto"`` (the GPU where the kernel
                compiles and an adapter exists, else the interpreter).
            racecheck: on the GPU, also run the shared-memory race check in
                the compiled kernel (off by default: as compute-sanitizer's
                racecheck, it is slow, about 20 times the checked kernel on an
                H100). The interpreter always checks races when ``check``.

        Returns a dict: ``passed``, ``entry``, ``path``, ``error`` (the launch's
        error message, or None), ``expect_error`` (the fault class the case
        expects, or None), ``buffers`` (per expected buffer: ``name``, ``dtype``,
        ``len``, ``mismatches``, ``max_ulp``, ``max_abs``, ``first_mismatch``,
        ``passed``), ``thread_instructions`` (the interpreter's count, None on
        the GPU), ``backend``, ``gpu_launches`` (launches the GPU ran) and
        ``fallbacks`` (why ``"auto"`` ran a launch on the interpreter).

        Raises:
            VGPUError: the case or its PTX cannot be read or parsed (PTX errors
                name ``file:line:col``), or ``backend="gpu"`` cannot run it.
            ValueError: an unknown backend.
        """
        return self._vgpu.ptx_case(os.fspath(path), check, parallel, initcheck, backend, racecheck)

    def __repr__(self) -> str:
        return "VGPU()"
