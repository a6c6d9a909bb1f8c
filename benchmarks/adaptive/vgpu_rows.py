"""VGPU's rows of the adaptive benchmark, beside bench_adaptive.py's (same JSON
line format, impl = "vgpu_wgsl"): `vgpu ensemble examples/lorenz[_f64].field
--method tsit5 --backend gpu` at N = 2^20 and 2^23, (a) f32 rtol = atol = 1e-6
and (c) f64 1e-8, dt0 = 1e-3, with the I controller (the anchors' headline)
and the PI controller (their variant). Kernel time: `--kernel-time 5` (device
time of the whole ensemble, mean of 5 dispatches after a warm-up, from
--json); whole command: wall time of the process; end to end inside the
process: --json "seconds" (host in, host out). Errors against the references
bench_adaptive.py saved (/tmp/adaptive_bench/ref_N.npz: the hand kernel in f64
at rtol = atol = 1e-12), with the same metric.

    python3 benchmarks/adaptive/vgpu_rows.py VGPU_BINARY      (appends to $OUT/adaptive.jsonl)
"""
import json, os, subprocess, sys, time
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_adaptive import errors, rho32, DATE  # noqa: E402  (the same error metric)

OUT = os.environ.get("OUT", "/tmp/out")
WORK = "/tmp/adaptive_bench"
VGPU = sys.argv[1] if len(sys.argv) > 1 else "./target/release/vgpu"
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def emit(**kw):
    line = json.dumps({"date": DATE, **kw})
    print(line, flush=True)
    with open(os.path.join(OUT, "adaptive.jsonl"), "a") as fh:
        fh.write(line + "\n")


def row(cfg, prec, tol, n, ctrl):
    field = "examples/lorenz.field" if prec == "f32" else "examples/lorenz_f64.field"
    out = os.path.join(WORK, f"vgpu_{cfg}_{ctrl}_{n}.npy")
    # The anchors' parameters: rho = float32(linspace(0, 21, N)), widened to f64
    # for the f64 runs (a linspace computed in f64 would be a different problem,
    # ~1e-7 away, and the error against the reference would measure that).
    rho = os.path.join(WORK, f"rho_{prec}_{n}.npy")
    np.save(rho, rho32(n).astype(np.float32 if prec == "f32" else np.float64))
    cmd = [VGPU, "ensemble", field, "--n", str(n), "--t", "0:1", "--method", "tsit5",
           "--rtol", str(tol), "--atol", str(tol), "--dt0", "1e-3", "--maxiters", "200000",
           "--controller", ctrl.lower(), "--param", f"rho={rho}", "--backend", "gpu",
           "--kernel-time", "5", "--json", "--out", out]
    w0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - w0
    if r.returncode:
        emit(bench="error", section=f"vgpu {cfg} {ctrl} {n}", cmd=" ".join(cmd), stderr=r.stderr[-1500:])
        return
    j = json.loads(r.stdout.strip().splitlines()[-1])
    y = np.load(out).astype(np.float64)
    steps = np.load(out[:-4] + ".steps.npy").astype(np.float64)
    z = np.load(os.path.join(WORK, f"ref_{n}.npz"))
    att = steps[:, 0] + steps[:, 1]
    emit(bench="lorenz_tsit5_adaptive", impl="vgpu_wgsl", config=cfg, precision=prec, rtol=tol, atol=tol,
         controller=ctrl, dt0=1e-3, n=n, seconds_best=j["kernel_seconds"],
         end_to_end_s=j["seconds"], whole_command_s=wall, adapter=j["adapter"], gpu_chunks=j["gpu_chunks"],
         mean_accepted=float(steps[:, 0].mean()), mean_rejected=float(steps[:, 1].mean()),
         max_accepted=int(steps[:, 0].max()), max_attempted=int(att.max()),
         failed=int(n - j["status_counts"]["success"]),
         ns_per_traj_attempted_step=j["kernel_seconds"] / att.sum() * 1e9,
         command=" ".join(cmd), **errors(y[z["idx"]], z["ref"], z["rho"].astype(np.float64)))


def main():
    os.makedirs(OUT, exist_ok=True)
    for ctrl in ["I", "PI"]:
        for cfg, prec, tol in [("a", "f32", 1e-6), ("c", "f64", 1e-8)]:
            for n in [2 ** 20, 2 ** 23]:
                row(cfg, prec, tol, n, ctrl)


if __name__ == "__main__":
    main()
