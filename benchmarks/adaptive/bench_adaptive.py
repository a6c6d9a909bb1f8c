"""Adaptive-step ensemble anchors on the GPU machine, all in one run.

    python3 benchmarks/adaptive/bench_adaptive.py      (writes $OUT/adaptive.jsonl)

Copied from the anchors of 2026-12-03 (see README.md here); only the path of
ptx-cases/kernels.cu changed (this file sits two levels below the repository root).

Problem (as the DiffEqGPU paper's Lorenz ensemble and ../bench_anchors.py):
sigma=10, beta=8/3, rho = float32(linspace(0, 21, N)) per trajectory (the f64 runs
use the same rho values, widened), u0 = (1, 0, 0), t in [0, 1], endpoint only.

1. tsit5_lorenz.cu (hand CUDA, one thread per trajectory, Tsit5 with per-trajectory
   step control, dt0 = 1e-3), built by nvcc -O3 -arch=sm_90 to a cubin, run by CuPy.
   Configs (a) f32 rtol=atol=1e-6, (b) f32 1e-8, (c) f64 1e-8, for N = 2^16, 2^20,
   2^23; controller I (headline), PI and I-as-diffrax (variants).  Kernel time:
   CUDA events, best (and median) of 5 after a warm-up.  Accuracy: on 4096
   trajectories spread over the ensemble, against the same kernel in f64 at
   rtol=atol=1e-12, itself checked against long-double RK4 (ref_cpu_longdouble.json).
2. (d) lorenz_rk4 of ../ptx-cases/kernels.cu, f32, 1000 fixed steps of 1e-3, for context.
3. (e) diffrax Tsit5 + PIDController(rtol, atol) under jax.vmap, configs (a) and (c),
   N = 2^16, 2^20 (2^23 and config (b) if time allows); jit compile time apart.
4. torchdiffeq dopri5 on the (N, 3) batch (one step size for the whole batch), if time allows.
"""
import json, os, subprocess, sys, time, statistics, traceback
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("OUT", "/tmp/out")
WORK = "/tmp/adaptive_bench"
RESULTS = os.path.join(OUT, "adaptive.jsonl")
DATE = "2026-12-03"
T0 = float(os.environ.get("BENCH_T0", time.time()))
BUDGET = float(os.environ.get("BENCH_BUDGET_S", "200"))  # optional work starts only before this
HARD = float(os.environ.get("BENCH_HARD_S", "330"))  # subprocesses are killed at this
SIZES = [2 ** 16, 2 ** 20, 2 ** 23]
CONFIGS = [("a", "f32", 1e-6), ("b", "f32", 1e-8), ("c", "f64", 1e-8)]
CTRL = {  # safety, qmin, qmax, beta1, beta2, qmin_acc   (see tsit5_lorenz.cu)
    "I": (0.9, 0.2, 10.0, 0.2, 0.0, 0.2),
    "PI": (0.9, 0.2, 10.0, 0.14, 0.08, 0.2),
    "I_diffrax": (0.9, 0.2, 10.0, 0.2, 0.0, 1.0),
}
DT0 = 1e-3
NSUB = 4096


def elapsed():
    return time.time() - T0


def emit(**kw):
    kw = {"date": DATE, **kw}
    line = json.dumps(kw)
    print(line, flush=True)
    with open(RESULTS, "a") as fh:
        fh.write(line + "\n")


def guarded(name, fn, *a, **kw):
    try:
        return fn(*a, **kw)
    except Exception as ex:
        emit(bench="error", section=name, error=repr(ex)[:300], tb=traceback.format_exc()[-1200:])
        return None


def rho32(n):
    return np.linspace(0.0, 21.0, n, dtype=np.float32)


def subset(n):
    return np.unique(np.linspace(0, n - 1, NSUB).round().astype(np.int64))


def errors(y, ref, rho):
    """y, ref: (m, 3).  norm-wise relative error per trajectory, and the project's
    bar metric max |y - ref| / max(|ref|, 1e-3) (bars/w2-adaptive)."""
    y = np.asarray(y, dtype=np.float64)
    d = y - ref
    nr = np.linalg.norm(d, axis=1) / np.linalg.norm(ref, axis=1)
    bar = np.abs(d) / np.maximum(np.abs(ref), 1e-3)
    big = rho > 1.0
    return dict(max_relerr=float(nr.max()), median_relerr=float(np.median(nr)),
                max_relerr_rho_gt_1=float(nr[big].max()), max_relerr_bar=float(bar.max()),
                nonfinite=int((~np.isfinite(y)).any(axis=1).sum()))


def versions():
    from importlib import metadata
    v = {}
    for p in ["numpy", "cupy-cuda13x", "jax", "jaxlib", "jax-cuda13-plugin", "diffrax", "equinox", "torch",
              "torchdiffeq"]:
        try:
            v[p] = metadata.version(p)
        except Exception:
            v[p] = None
    return v


# --------------------------------------------------------------------------- CuPy part
def build():
    os.makedirs(WORK, exist_ok=True)
    nvcc = "nvcc" if subprocess.run(["which", "nvcc"], capture_output=True).returncode == 0 \
        else "/usr/local/cuda/bin/nvcc"
    info = {}
    for name, src in [("tsit5", os.path.join(HERE, "tsit5_lorenz.cu")),
                      ("kernels", os.path.join(HERE, "..", "..", "ptx-cases", "kernels.cu"))]:
        dst = os.path.join(WORK, name + ".cubin")
        r = subprocess.run([nvcc, "-O3", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-diag-suppress", "177",
                            "-o", dst, src], capture_output=True, text=True)
        if r.returncode:
            print(r.stdout, r.stderr, flush=True)
            raise SystemExit("nvcc failed")
        info[name] = [ln.strip() for ln in r.stderr.splitlines() if "registers" in ln or "spill" in ln
                      or "entry function" in ln]
    nv = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-2:]
    return nv, info


class Tsit5:
    def __init__(self, cp, path):
        self.cp = cp
        mod = cp.RawModule(path=path)
        self.k = {"f32": mod.get_function("tsit5_lorenz_f32"), "f64": mod.get_function("tsit5_lorenz_f64")}

    def run(self, prec, rho, tol, ctrl="I", block=256, reps=5, maxiters=200000):
        cp = self.cp
        dt = np.float32 if prec == "f32" else np.float64
        n = len(rho)
        u0 = cp.zeros((n, 3), dtype=dt)
        u0[:, 0] = 1
        st = cp.empty_like(u0)
        r = cp.asarray(rho.astype(dt))
        nacc = cp.empty(n, dtype=cp.int32)
        nrej = cp.empty(n, dtype=cp.int32)
        c = CTRL[ctrl]
        args = (st, r, nacc, nrej, np.int32(n), dt(1.0), dt(DT0), dt(tol), dt(tol),
                *[np.float32(x) for x in c], np.int32(maxiters))
        grid = ((n + block - 1) // block,)
        kern = self.k[prec]
        cp.copyto(st, u0)
        kern(grid, (block,), args)  # warm-up
        cp.cuda.runtime.deviceSynchronize()
        ts = []
        s, e = cp.cuda.Event(), cp.cuda.Event()
        for _ in range(reps):
            cp.copyto(st, u0)
            s.record()
            kern(grid, (block,), args)
            e.record()
            e.synchronize()
            ts.append(cp.cuda.get_elapsed_time(s, e) / 1e3)
        return (min(ts) if ts else None, statistics.median(ts) if ts else None,
                st.get(), nacc.get(), nrej.get())


def cupy_part():
    import cupy as cp
    nv, ptxas = build()
    dev = cp.cuda.runtime.getDeviceProperties(0)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                          "clocks.max.mem,power.limit", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    emit(bench="env", gpu=dev["name"].decode(), sm_count=dev["multiProcessorCount"], nvidia_smi=smi,
         cuda_runtime=cp.cuda.runtime.runtimeGetVersion(), cuda_driver=cp.cuda.runtime.driverGetVersion(),
         nvcc=nv, ptxas=ptxas, python=sys.version.split()[0], versions=versions(),
         build="nvcc -O3 -arch=sm_90 -cubin (no fast-math; fmad on), CuPy RawModule")
    ts = Tsit5(cp, os.path.join(WORK, "tsit5.cubin"))
    guarded("attrs", lambda: emit(bench="kernel_attrs", attrs={
        p: dict(num_regs=k.num_regs, local_size_bytes=k.local_size_bytes) for p, k in ts.k.items()}))
    guarded("reference_check", reference_check, ts)
    # reference endpoints on each N's subset: f64, rtol = atol = 1e-12, same kernel
    refs = {}
    for n in SIZES:
        idx = subset(n)
        r = rho32(n)[idx]
        _, _, y, a, rj = ts.run("f64", r, 1e-12, reps=0, maxiters=10 ** 6)
        assert (rj >= 0).all()
        refs[n] = (idx, y)
        np.savez(os.path.join(WORK, f"ref_{n}.npz"), idx=idx, ref=y, rho=r)
    emit(bench="progress", after="references", elapsed_s=elapsed())
    best_block = guarded("block_sweep", block_sweep, ts) or {}
    for ctrl in ["I", "PI", "I_diffrax"]:
        for cfg, prec, tol in CONFIGS:
            for n in SIZES:
                if ctrl == "I_diffrax" and n == SIZES[-1]:
                    continue
                guarded(f"tsit5 {ctrl} {cfg} {n}", tsit5_row, ts, refs, ctrl, cfg, prec, tol, n,
                        best_block.get(prec, 256))
    emit(bench="progress", after="tsit5 table", elapsed_s=elapsed())
    guarded("rk4", rk4_rows, cp, refs)
    cp.get_default_memory_pool().free_all_blocks()


def reference_check(ts):
    """The reference kernel (f64, 1e-12) against long-double RK4, and a tolerance sweep."""
    ref_ld = json.load(open(os.path.join(HERE, "ref_cpu_longdouble.json")))["rows"]
    rho_ld = np.array([np.float32(r["rho"]) for r in ref_ld], dtype=np.float32)
    u_ld = np.array([r["u"] for r in ref_ld], dtype=np.float64)
    _, _, y, a, rj = ts.run("f64", rho_ld, 1e-12, reps=0, maxiters=10 ** 6)
    emit(bench="reference_check", what="tsit5 f64 rtol=atol=1e-12 (GPU) vs long-double RK4 h=1e-5 (CPU)",
         rows=len(rho_ld), mean_accepted=float(a.mean()), **errors(y, u_ld, rho_ld.astype(np.float64)))
    # f64, I controller: error ~ tol and steps ~ tol^(-1/5) (order check on the GPU)
    for tol in [1e-4, 1e-6, 1e-8, 1e-10, 1e-12]:
        _, _, y, a, rj = ts.run("f64", rho_ld, tol, reps=0)
        emit(bench="tol_sweep_f64_I", rtol=tol, atol=tol, rows=len(rho_ld), mean_accepted=float(a.mean()),
             mean_rejected=float(rj.mean()), **errors(y, u_ld, rho_ld.astype(np.float64)))


def block_sweep(ts):
    best = {}
    n = SIZES[-1]
    for cfg, prec, tol in [CONFIGS[0], CONFIGS[2]]:
        res = {b: ts.run(prec, rho32(n), tol, block=b, reps=3)[0] for b in [64, 128, 256, 512]}
        best[prec] = min(res, key=res.get)
        emit(bench="block_sweep", config=cfg, precision=prec, n=n, rtol=tol, controller="I",
             seconds_best_by_block=res)
    return best


def tsit5_row(ts, refs, ctrl, cfg, prec, tol, n, blk):
    tb, tm, y, a, rj = ts.run(prec, rho32(n), tol, ctrl=ctrl, block=blk)
    idx, ref = refs[n]
    rjc = np.maximum(rj, 0)
    att = a.astype(np.float64) + rjc
    emit(bench="lorenz_tsit5_adaptive", impl="cuda_handwritten", config=cfg, precision=prec,
         rtol=tol, atol=tol, controller=ctrl, dt0=DT0, n=n, block=blk, seconds_best=tb,
         seconds_median=tm, mean_accepted=float(a.mean()), mean_rejected=float(rjc.mean()),
         max_accepted=int(a.max()), max_attempted=int(att.max()), failed=int((rj < 0).sum()),
         ns_per_traj_attempted_step=tb / att.sum() * 1e9,
         **errors(y[idx], ref, rho32(n)[idx].astype(np.float64)))


def rk4_rows(cp, refs):
    """(d) fixed-step RK4 of ../ptx-cases/kernels.cu, f32, 1000 steps of 1e-3, block 256, for context."""
    mod = cp.RawModule(path=os.path.join(WORK, "kernels.cubin"))
    k = mod.get_function("lorenz_rk4")
    for n in SIZES:
        u0 = cp.zeros((n, 3), dtype=cp.float32)
        u0[:, 0] = 1
        st = cp.empty_like(u0)
        r = cp.asarray(rho32(n))
        grid = ((n + 255) // 256,)
        args = (st, r, np.float32(1e-3), np.int32(1000), np.int32(n))
        cp.copyto(st, u0)
        k(grid, (256,), args)
        cp.cuda.runtime.deviceSynchronize()
        s, e = cp.cuda.Event(), cp.cuda.Event()
        tl = []
        for _ in range(5):
            cp.copyto(st, u0)
            s.record()
            k(grid, (256,), args)
            e.record()
            e.synchronize()
            tl.append(cp.cuda.get_elapsed_time(s, e) / 1e3)
        idx, ref = refs[n]
        emit(bench="lorenz_rk4_fixed", impl="cuda_handwritten", config="d", precision="f32", steps=1000, dt=1e-3,
             n=n, block=256, seconds_best=min(tl), seconds_median=statistics.median(tl),
             **errors(st.get()[idx], ref, rho32(n)[idx].astype(np.float64)))


# --------------------------------------------------------------------------- diffrax part (subprocess)
def diffrax_part(prec):
    import jax
    import jax.numpy as jnp
    import diffrax
    dt = np.float32 if prec == "f32" else np.float64
    assert jnp.zeros(1, dtype=dt).dtype == dt, "x64 not enabled"

    def f(t, u, r):
        x, y, z = u[0], u[1], u[2]
        return jnp.stack([10.0 * (y - x), x * (r - z) - y, x * y - (8.0 / 3.0) * z])
    term = diffrax.ODETerm(f)
    for k, (cfg, tol, n) in enumerate(diffrax_plan(prec)):
        if k >= 2 and elapsed() > BUDGET:
            emit(bench="lorenz_tsit5_adaptive", impl="diffrax_vmap", config=cfg, precision=prec, n=n,
                 skipped="time budget")
            continue
        guarded(f"diffrax {cfg} {n}", diffrax_row, jax, jnp, diffrax, term, prec, dt, cfg, tol, n)


def diffrax_plan(prec):
    if prec == "f32":
        return [("a", 1e-6, 2 ** 16), ("a", 1e-6, 2 ** 20), ("b", 1e-8, 2 ** 20), ("a", 1e-6, 2 ** 23)]
    return [("c", 1e-8, 2 ** 16), ("c", 1e-8, 2 ** 20), ("c", 1e-8, 2 ** 23)]


def diffrax_row(jax, jnp, diffrax, term, prec, dt, cfg, tol, n):
    def solve(u, r):
        sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), t0=0.0, t1=1.0, dt0=DT0, y0=u, args=r,
                                  stepsize_controller=diffrax.PIDController(rtol=tol, atol=tol),
                                  saveat=diffrax.SaveAt(t1=True), max_steps=100000)
        return sol.ys[0], sol.stats["num_accepted_steps"], sol.stats["num_rejected_steps"]
    u0 = np.zeros((n, 3), dtype=dt)
    u0[:, 0] = 1
    U, R = jnp.asarray(u0), jnp.asarray(rho32(n).astype(dt))
    c0 = time.perf_counter()
    comp = jax.jit(jax.vmap(solve)).lower(U, R).compile()
    t_compile = time.perf_counter() - c0
    w0 = time.perf_counter()
    out = comp(U, R)
    jax.block_until_ready(out)
    t_first = time.perf_counter() - w0
    reps = 3 if t_first < 3 else 1
    tl = []
    for _ in range(reps):
        w0 = time.perf_counter()
        out = comp(U, R)
        jax.block_until_ready(out)
        tl.append(time.perf_counter() - w0)
    ys, acc, rej = (np.asarray(o) for o in out)
    z = np.load(os.path.join(WORK, f"ref_{n}.npz"))
    emit(bench="lorenz_tsit5_adaptive", impl="diffrax_vmap", config=cfg, precision=prec, rtol=tol, atol=tol,
         controller="diffrax PIDController default (I, safety 0.9, factor 0.2..10, accepted >= 1)",
         dt0=DT0, n=n, seconds_best=min(tl), seconds_median=statistics.median(tl), reps=reps,
         jit_compile_s=t_compile, first_call_s=t_first, mean_accepted=float(acc.mean()),
         mean_rejected=float(rej.mean()), max_accepted=int(acc.max()),
         **errors(ys[z["idx"]], z["ref"], z["rho"].astype(np.float64)))


def torch_part():
    import torch
    from torchdiffeq import odeint
    for prec, tol, cfg in [("f32", 1e-6, "a"), ("f64", 1e-8, "c")]:
        for n in [2 ** 16, 2 ** 20]:
            if elapsed() > HARD - 30:
                emit(bench="lorenz_dopri5_batched", impl="torchdiffeq", config=cfg, n=n, skipped="time budget")
                continue
            guarded(f"torchdiffeq {cfg} {n}", torch_row, torch, odeint, prec, tol, cfg, n)


def torch_row(torch, odeint, prec, tol, cfg, n):
    tdt = torch.float32 if prec == "f32" else torch.float64
    R = torch.from_numpy(rho32(n).astype(np.float64)).to("cuda", tdt)
    U = torch.zeros((n, 3), dtype=tdt, device="cuda")
    U[:, 0] = 1
    nfe = [0]

    def rhs(t, u):
        nfe[0] += 1
        x, y, z = u[:, 0], u[:, 1], u[:, 2]
        return torch.stack([10.0 * (y - x), x * (R - z) - y, x * y - (8.0 / 3.0) * z], 1)
    tt = torch.tensor([0.0, 1.0], dtype=tdt, device="cuda")

    def go():
        out = odeint(rhs, U, tt, rtol=tol, atol=tol, method="dopri5", options=dict(first_step=DT0))
        torch.cuda.synchronize()
        return out
    go()
    tl = []
    for _ in range(3):
        nfe[0] = 0
        w0 = time.perf_counter()
        out = go()
        tl.append(time.perf_counter() - w0)
    z = np.load(os.path.join(WORK, f"ref_{n}.npz"))
    emit(bench="lorenz_dopri5_batched", impl="torchdiffeq", config=cfg, precision=prec, rtol=tol, atol=tol,
         n=n, note="one step size for the whole (N,3) batch, RMS error norm over the batch",
         seconds_best=min(tl), seconds_median=statistics.median(tl), nfe=nfe[0],
         **errors(out[-1].cpu().numpy()[z["idx"]], z["ref"], z["rho"].astype(np.float64)))


def sub(args, extra_env=None):
    timeout = max(20.0, HARD - elapsed())
    env = dict(os.environ, BENCH_T0=str(T0), XLA_PYTHON_CLIENT_PREALLOCATE="false", **(extra_env or {}))
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), *args], env=env, timeout=timeout,
                           capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        if r.returncode:
            emit(bench="subprocess_error", args=args, rc=r.returncode, stderr_tail=r.stderr[-1500:])
    except subprocess.TimeoutExpired as ex:
        emit(bench="subprocess_timeout", args=args, timeout_s=timeout,
             stdout_tail=(ex.stdout or b"")[-500:].decode(errors="replace") if isinstance(ex.stdout, bytes) else None)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--diffrax":
        return diffrax_part(sys.argv[2])
    if len(sys.argv) > 1 and sys.argv[1] == "--torch":
        return torch_part()
    os.makedirs(OUT, exist_ok=True)
    open(RESULTS, "w").close()
    guarded("cupy part", cupy_part)
    emit(bench="progress", after="cupy part", elapsed_s=elapsed())
    sub(["--diffrax", "f32"])
    emit(bench="progress", after="diffrax f32", elapsed_s=elapsed())
    sub(["--diffrax", "f64"], extra_env={"JAX_ENABLE_X64": "1"})
    emit(bench="progress", after="diffrax f64", elapsed_s=elapsed())
    if elapsed() < HARD - 70:
        sub(["--torch"])
    else:
        emit(bench="lorenz_dopri5_batched", impl="torchdiffeq", skipped="time budget")
    emit(bench="progress", after="all", elapsed_s=elapsed())


if __name__ == "__main__":
    main()
