"""Work-precision plot of the adaptive benchmark: error (max norm-wise relative
error, rho > 1, against the f64 rtol = atol = 1e-12 reference) against time,
one marker per implementation, controller and precision, for each N.

    python3 benchmarks/adaptive/plot.py $OUT/adaptive.jsonl $OUT/adaptive_work_precision.png
"""
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    rows = [json.loads(l) for l in open(src) if l.strip()]
    rows = [r for r in rows if r.get("bench") == "lorenz_tsit5_adaptive" and r.get("seconds_best")
            and r.get("max_relerr_rho_gt_1") is not None]
    sizes = sorted({r["n"] for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4.5), squeeze=False)
    marks = {"cuda_handwritten": "o", "vgpu_wgsl": "s", "diffrax_vmap": "^"}
    for ax, n in zip(axes[0], sizes):
        groups = {}
        for r in rows:
            if r["n"] != n:
                continue
            key = (r["impl"], r.get("controller", "").split(" ")[0], r["precision"])
            groups.setdefault(key, []).append((r["seconds_best"] * 1e3, r["max_relerr_rho_gt_1"], r["rtol"]))
        for (impl, ctrl, prec), pts in sorted(groups.items()):
            pts.sort()
            ax.loglog([p[0] for p in pts], [p[1] for p in pts], marker=marks.get(impl, "x"),
                      linestyle="-" if prec == "f64" else "--", label=f"{impl} {ctrl} {prec}")
            for t, e, tol in pts:
                ax.annotate(f"{tol:g}", (t, e), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_title(f"Lorenz Tsit5, N = 2^{n.bit_length() - 1}")
        ax.set_xlabel("kernel / call time (ms)")
        ax.set_ylabel("max rel. error (rho > 1)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(dst, dpi=130)
    print(f"wrote {dst} ({len(rows)} rows)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
