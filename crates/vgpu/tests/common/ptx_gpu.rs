//! What the PTX GPU tests share: the skip rule without an adapter, loading a
//! kernel of `tests/kernels/`, one launch on the interpreter and one on the GPU
//! path, and the word-by-word comparison of what the two wrote.

use std::path::Path;
use vgpu::gpu::FmaF32Path;
use vgpu::ptx::{ExecOptions, KernelArg, LaunchConfig, Module};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::BackendChoice;

/// Whether there is no GPU adapter, so the test returns at once (skipped);
/// with `VGPU_REQUIRE_GPU=1` a missing adapter fails the test instead.
pub(crate) fn no_adapter() -> bool {
    let Err(e) = vgpu::gpu::GpuContext::get() else {
        return false;
    };
    assert!(
        std::env::var("VGPU_REQUIRE_GPU").as_deref() != Ok("1"),
        "VGPU_REQUIRE_GPU=1 but there is no GPU adapter: {e}"
    );
    eprintln!("no GPU adapter ({e}): skipped");
    true
}

/// A one-dimensional launch: `grid` blocks of `block` threads with `shared`
/// bytes of dynamic shared memory.
pub(crate) fn line(grid: u32, block: u32, shared: u32) -> LaunchConfig {
    LaunchConfig {
        grid: [grid, 1, 1].into(),
        block: [block, 1, 1].into(),
        shared_bytes: shared,
    }
}

/// The arguments `Buffer(0), Buffer(1)`: an input and an output.
/// The f32 specials every exactness test starts from: ±0, ±∞, a quiet NaN,
/// a signalling NaN and a negative NaN with payload.
pub(crate) const F32_SPECIALS: [u32; 7] = [
    0,
    0x8000_0000,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0x7f80_0001,
    0xffc0_1234,
];

pub(crate) const IN_OUT: [KernelArg; 2] = [KernelArg::Buffer(0), KernelArg::Buffer(1)];

/// Launches `entry` of `m` on `backend` over `bufs` (a fresh runner, default
/// options but `fma` for the GPU's f32 fma); panics naming the backend when
/// the launch fails, and prints how long it took (a GPU launch of a new shape
/// includes its shader compile). Returns the runner.
fn launch(
    backend: BackendChoice,
    fma: FmaF32Path,
    m: &Module,
    entry: &str,
    cfg: &LaunchConfig,
    args: &[KernelArg],
    bufs: &mut [Vec<u8>],
) -> PtxRunner {
    let t = std::time::Instant::now();
    let mut runner = PtxRunner::new(backend, true);
    runner.fma_f32 = fma;
    runner
        .launch(m, entry, cfg, args, bufs, &ExecOptions::default())
        .unwrap_or_else(|e| panic!("{backend:?}: {e}"));
    eprintln!(
        "{entry} grid {} block {} on {backend:?}: {:.2} s",
        cfg.grid,
        cfg.block,
        t.elapsed().as_secs_f64()
    );
    runner
}

/// A kernel of `tests/kernels/`: the file `ENTRY.ptx` and its entry `ENTRY`.
pub(crate) struct Kernel {
    pub(crate) module: Module,
    entry: &'static str,
}

impl Kernel {
    /// Parses `tests/kernels/ENTRY.ptx`; `None` when there is no GPU adapter,
    /// so the test returns at once ([`no_adapter`]).
    pub(crate) fn load(entry: &'static str) -> Option<Kernel> {
        if no_adapter() {
            return None;
        }
        let file = format!("{entry}.ptx");
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/kernels")
            .join(&file);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let module = Module::parse(&text, &file).unwrap_or_else(|e| panic!("{file}: {e}"));
        Some(Kernel { module, entry })
    }

    /// [`Kernel::load`] for a kernel that keeps f64 values in registers:
    /// also `None` (skipped, said on stderr) when the adapter lacks
    /// SHADER_F64 or SHADER_INT64.
    pub(crate) fn load_f64(entry: &'static str) -> Option<Kernel> {
        let k = Kernel::load(entry)?;
        let ctx = vgpu::gpu::GpuContext::get().expect("an adapter (Kernel::load checked)");
        if !ctx.has_f64() || !ctx.has_int64() {
            eprintln!("the adapter lacks SHADER_F64 or SHADER_INT64: skipped");
            return None;
        }
        Some(k)
    }

    /// Launches the kernel once on the interpreter and once on the GPU path,
    /// each over its own copy of `bufs`; returns buffer `out` after each:
    /// (cpu, gpu).
    pub(crate) fn on_both(
        &self,
        cfg: &LaunchConfig,
        args: &[KernelArg],
        bufs: &[Vec<u8>],
        out: usize,
    ) -> (Vec<u8>, Vec<u8>) {
        let (cpu, gpu, _) = self.on_both_fma(FmaF32Path::Auto, cfg, args, bufs, out);
        (cpu, gpu)
    }

    /// [`Kernel::on_both`] with the GPU's f32 fma run as `fma` says; also
    /// returns how the GPU ran it (the runner's `native_fma_f32`).
    pub(crate) fn on_both_fma(
        &self,
        fma: FmaF32Path,
        cfg: &LaunchConfig,
        args: &[KernelArg],
        bufs: &[Vec<u8>],
        out: usize,
    ) -> (Vec<u8>, Vec<u8>, Option<bool>) {
        let go = |backend| {
            let mut b = bufs.to_vec();
            let r = launch(backend, fma, &self.module, self.entry, cfg, args, &mut b);
            (b.swap_remove(out), r.native_fma_f32)
        };
        let (cpu, _) = go(BackendChoice::Cpu);
        let (gpu, native) = go(BackendChoice::Gpu);
        (cpu, gpu, native)
    }
}

/// An input buffer (`x` in little-endian bytes through `le`, e.g.
/// `u32::to_le_bytes`) and a zeroed output buffer of `out_bytes`: the buffers
/// of a kernel called with [`IN_OUT`].
pub(crate) fn in_out<T: Copy, const B: usize>(
    x: &[T],
    le: fn(T) -> [u8; B],
    out_bytes: usize,
) -> [Vec<u8>; 2] {
    [
        x.iter().flat_map(|&v| le(v)).collect(),
        vec![0u8; out_bytes],
    ]
}

/// Little-endian 32-bit word `i` of `v`.
pub(crate) fn word(v: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(v[4 * i..4 * i + 4].try_into().unwrap())
}

/// How two outputs are compared: each thread `t` wrote `stride` words from
/// word `stride · t`, of which the first `names.len()` are results (named in
/// a failure); `thread(t)` describes thread `t`'s inputs.
pub(crate) struct Words<'a, N: AsRef<str>> {
    /// Words per thread.
    pub(crate) stride: usize,
    /// The names of the compared words of a thread, in order.
    pub(crate) names: &'a [N],
}

impl<N: AsRef<str>> Words<'_, N> {
    /// Asserts that every compared word of `cpu` and `gpu` (equally long)
    /// satisfies `same`, else panics with how many differ and the first 30.
    pub(crate) fn assert_same(
        &self,
        cpu: &[u8],
        gpu: &[u8],
        thread: impl Fn(usize) -> String,
        same: impl Fn(u32, u32) -> bool,
    ) {
        assert_eq!(cpu.len(), gpu.len(), "the outputs differ in length");
        let threads = cpu.len() / (4 * self.stride);
        let mut bad = Vec::new();
        for t in 0..threads {
            for (j, name) in self.names.iter().enumerate() {
                let (c, g) = (
                    word(cpu, self.stride * t + j),
                    word(gpu, self.stride * t + j),
                );
                if !same(c, g) {
                    bad.push(format!(
                        "{}: {}: cpu {c:#x}, gpu {g:#x}",
                        thread(t),
                        name.as_ref()
                    ));
                }
            }
        }
        assert!(
            bad.is_empty(),
            "{} of {} results differ:\n{}",
            bad.len(),
            threads * self.names.len(),
            bad.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}

/// [`Words::assert_same`], bitwise, over every word of the `stride` bytes each
/// thread writes (the words named by their byte offset), each thread named by
/// its `per` u64 inputs in `x` (thread `t`'s at `x[per · t..]`).
pub(crate) fn assert_same_bytes(cpu: &[u8], gpu: &[u8], stride: usize, x: &[u64], per: usize) {
    let names: Vec<String> = (0..stride / 4).map(|w| format!("byte {}", 4 * w)).collect();
    let inputs = |t: usize| {
        let x: Vec<String> = x[per * t..per * (t + 1)]
            .iter()
            .map(|v| format!("{v:#x}"))
            .collect();
        format!("thread {t} (inputs {})", x.join(", "))
    };
    Words {
        stride: stride / 4,
        names: &names,
    }
    .assert_same(cpu, gpu, inputs, bitwise);
}

/// Bitwise equality of two words.
pub(crate) fn bitwise(c: u32, g: u32) -> bool {
    c == g
}

/// The xorshift generator of the tests' inputs.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// The next 64-bit state.
    pub(crate) fn next64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// 32 bits of the next state (bits 16 to 47).
    pub(crate) fn next32(&mut self) -> u32 {
        (self.next64() >> 16) as u32
    }
}
