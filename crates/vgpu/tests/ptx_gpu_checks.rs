//! The GPU checker's block-level checks (vgpu-ir's wgsl/cfg/checks.rs) against
//! the interpreter's: each planted bug of `tests/kernels/checks.ptx` faults on
//! the GPU path with the interpreter's class, line, block and thread, its
//! correct counterpart runs to the same bytes on both, and with the checks
//! off (`--unchecked`) the GPU reports nothing. Skipped without an adapter
//! unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::no_adapter;
use std::path::Path;
use vgpu::ptx::{ExecOptions, Fault, FaultClass, KernelArg, LaunchConfig, Module, PtxError};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::BackendChoice;
use vgpu_ir::wgsl::cfg::{emit_cfg_wgsl, emit_cfg_wgsl_with, CfgChecks, CfgWgslOptions};

/// `tests/kernels/checks.ptx`, or `None` without an adapter (skipped).
fn module() -> Option<Module> {
    if no_adapter() {
        return None;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/checks.ptx");
    let text = std::fs::read_to_string(&path).expect("tests/kernels/checks.ptx");
    Some(Module::parse(&text, "checks.ptx").expect("checks.ptx parses"))
}

/// Launches `entry` on `backend` (checked unless `unchecked`; on the GPU with
/// the race check) over one zeroed buffer of `words` words; the buffer or
/// the error.
fn launch(
    m: &Module,
    backend: BackendChoice,
    unchecked: bool,
    entry: &str,
    cfg: &LaunchConfig,
    words: usize,
) -> Result<Vec<u8>, PtxError> {
    let opts = ExecOptions {
        check: !unchecked,
        ..ExecOptions::default()
    };
    launch_with(m, backend, entry, cfg, words, &opts, true)
}

/// [`launch`] under `opts` (checked where `opts.check`), the GPU's race check
/// where `racecheck`.
fn launch_with(
    m: &Module,
    backend: BackendChoice,
    entry: &str,
    cfg: &LaunchConfig,
    words: usize,
    opts: &ExecOptions,
    racecheck: bool,
) -> Result<Vec<u8>, PtxError> {
    let mut bufs = vec![vec![0u8; 4 * words]];
    let mut runner = PtxRunner::new(backend, opts.check);
    runner.racecheck = racecheck;
    runner.launch(m, entry, cfg, &[KernelArg::Buffer(0)], &mut bufs, opts)?;
    Ok(bufs.swap_remove(0))
}

/// Whether `entry`, checked, for blocks of `block`, is written in the
/// structured form (vgpu-ir's structured.rs), whose faulting threads go on
/// meeting the kernel's barriers, rather than the state machine.
fn structured_when_checked(m: &Module, entry: &str, block: [u32; 3]) -> bool {
    let (_, ck) = vgpu::ptx::lower::lower_entry(m, entry).expect("the kernel lowers");
    let o = CfgWgslOptions::plain(block, true);
    let w = emit_cfg_wgsl(&ck, &o).expect("WGSL");
    w.contains("fn run_thread(") && !w.contains("switch pc")
}

/// The checked WGSL of `entry` at 64 threads a block, without the race
/// check and the global-memory initcheck.
fn checked_wgsl_64(m: &Module, entry: &str) -> String {
    let (_, ck) = vgpu::ptx::lower::lower_entry(m, entry).expect("the kernel lowers");
    let o = CfgWgslOptions::plain([64, 1, 1], true);
    let no_race = CfgChecks {
        initcheck: false,
        race: false,
    };
    emit_cfg_wgsl_with(&ck, &o, no_race).expect("WGSL")
}

/// The fault of a launch that must fault.
fn fault(r: Result<Vec<u8>, PtxError>, what: &str) -> Fault {
    match r {
        Err(PtxError::Fault(f)) => *f,
        Err(e) => panic!("{what}: expected a fault, got {e}"),
        Ok(_) => panic!("{what}: expected a fault, the kernel ran to completion"),
    }
}

/// `entry` faults on both backends with the same class, line, block and
/// thread, and that is (`class`, `line`, `block`, `thread`), on the GPU with
/// the race check and without it (whose barriers release the
/// initialisation check with one barrier: checks.rs, `shadow_release`);
/// unchecked, the GPU runs it to completion.
fn same_fault(
    m: &Module,
    entry: &str,
    cfg: &LaunchConfig,
    class: FaultClass,
    line: u32,
    block: [u32; 3],
    thread: [u32; 3],
) {
    let cpu = fault(
        launch(m, BackendChoice::Cpu, false, entry, cfg, 1024),
        entry,
    );
    let gpu = fault(
        launch(m, BackendChoice::Gpu, false, entry, cfg, 1024),
        entry,
    );
    eprintln!("{entry}: cpu {cpu}\n{entry}: gpu {gpu}");
    let key = |f: &Fault| (f.class, f.line, f.block, f.thread);
    assert_eq!(
        key(&cpu),
        (class, line, block, thread),
        "{entry} on the CPU"
    );
    assert_eq!(key(&gpu), key(&cpu), "{entry}: the GPU's fault");
    let opts = ExecOptions::default();
    let gpu = fault(
        launch_with(m, BackendChoice::Gpu, entry, cfg, 1024, &opts, false),
        entry,
    );
    assert_eq!(
        key(&gpu),
        key(&cpu),
        "{entry}: the GPU's fault without the race check"
    );
    launch(m, BackendChoice::Gpu, true, entry, cfg, 1024)
        .unwrap_or_else(|e| panic!("{entry} unchecked on the GPU: {e}"));
}

fn cfg(grid: [u32; 3], block: [u32; 3]) -> LaunchConfig {
    LaunchConfig {
        grid: grid.into(),
        block: block.into(),
        shared_bytes: 0,
    }
}

/// Threads that exit before a barrier the others wait at: the lowest exited
/// thread, at the barrier's line, in the one block (of two) that does it; the
/// thread's index in a two-dimensional block.
#[test]
fn an_exit_before_a_barrier_is_a_barrier_fault() {
    let Some(m) = module() else { return };
    same_fault(
        &m,
        "bar_exit",
        &cfg([1, 2, 1], [16, 4, 1]),
        FaultClass::Barrier,
        26,
        [0, 1, 0],
        [8, 2, 0],
    );
}

/// Threads waiting at two different barriers: the lowest thread at a barrier
/// other than thread 0's, at its own barrier's line.
#[test]
fn threads_at_different_barriers_are_a_barrier_fault() {
    let Some(m) = module() else { return };
    same_fault(
        &m,
        "bar_two",
        &cfg([1, 1, 1], [64, 1, 1]),
        FaultClass::Barrier,
        40,
        [0, 0, 0],
        [3, 0, 0],
    );
}

/// The correct counterpart: barriers in a loop reached by different paths,
/// exits after the last: no fault on either backend, the same sums.
#[test]
fn barriers_every_thread_reaches_are_not_reported() {
    let Some(m) = module() else { return };
    let c = cfg([2, 1, 1], [96, 1, 1]);
    let cpu = launch(&m, BackendChoice::Cpu, false, "bar_ok", &c, 96).expect("bar_ok on the CPU");
    let gpu = launch(&m, BackendChoice::Gpu, false, "bar_ok", &c, 96).expect("bar_ok on the GPU");
    assert_eq!(cpu, gpu);
    // Not vacuous: the loop ran and read the neighbours' words.
    assert_ne!(cpu[4..8], [0u8; 4]);
}

/// A read of shared words nothing wrote after a barrier: the lowest reading
/// thread (in a two-dimensional block), at its read's line.
#[test]
fn a_read_of_unwritten_shared_memory_is_uninitialized() {
    let Some(m) = module() else { return };
    same_fault(
        &m,
        "sh_uninit",
        &cfg([1, 1, 1], [8, 4, 1]),
        FaultClass::Uninitialized,
        106,
        [0, 0, 0],
        [4, 2, 0],
    );
}

/// A byte granularity: a 16-bit generic load of a word whose low byte only
/// was written, in a kernel without barriers (reported at the block's end).
#[test]
fn a_half_written_load_by_a_generic_address_is_uninitialized() {
    let Some(m) = module() else { return };
    same_fault(
        &m,
        "sh_subword",
        &cfg([1, 1, 1], [64, 1, 1]),
        FaultClass::Uninitialized,
        127,
        [0, 0, 0],
        [0, 0, 0],
    );
}

/// An atomic on a shared word nothing wrote faults at once.
#[test]
fn an_atomic_on_unwritten_shared_memory_is_uninitialized() {
    let Some(m) = module() else { return };
    same_fault(
        &m,
        "sh_atom_uninit",
        &cfg([1, 1, 1], [32, 1, 1]),
        FaultClass::Uninitialized,
        141,
        [0, 0, 0],
        [5, 0, 0],
    );
}

/// The correct counterpart: every byte read was written first (sub-word,
/// generic and atomic writes, across barriers): no fault, the same sums.
#[test]
fn reads_of_written_shared_memory_are_not_reported() {
    let Some(m) = module() else { return };
    let c = cfg([2, 1, 1], [64, 1, 1]);
    let cpu = launch(&m, BackendChoice::Cpu, false, "sh_ok", &c, 64).expect("sh_ok on the CPU");
    let gpu = launch(&m, BackendChoice::Gpu, false, "sh_ok", &c, 64).expect("sh_ok on the GPU");
    assert_eq!(cpu, gpu);
    assert_ne!(cpu[4..8], [0u8; 4]);
}

/// Shared memory written whole word by whole word across barriers, its last
/// word part-used (37 bytes): while one byte is unwritten the GPU's count of
/// written words must not take the memory for written (thread 32's read of
/// byte 32 faults, at its line), and once every byte is, the reads that it
/// spares the bits' test read the values written.
#[test]
fn the_count_of_written_shared_words_misses_no_unwritten_byte() {
    let Some(m) = module() else { return };
    let c = cfg([2, 1, 1], [64, 1, 1]);
    same_fault(
        &m,
        "sh_fill_gap",
        &c,
        FaultClass::Uninitialized,
        549,
        [0, 0, 0],
        [32, 0, 0],
    );
    let cpu = launch(&m, BackendChoice::Cpu, false, "sh_fill_ok", &c, 64).expect("on the CPU");
    let gpu = launch(&m, BackendChoice::Gpu, false, "sh_fill_ok", &c, 64).expect("on the GPU");
    assert_eq!(cpu, gpu);
    let want: Vec<u8> = (0..64u32)
        .flat_map(|t| if t < 37 { t + 100 } else { 0 }.to_le_bytes())
        .collect();
    assert_eq!(gpu, want);
}

/// A loop without barriers that reads shared memory, after a barrier: the
/// GPU writes it twice (vgpu-ir's structured.rs, `loop_code`), and runs the
/// copy without the initialisation check's notes once all of shared memory
/// is written (sh_loop_ok: the interpreter's sums, with the race check and
/// without; its stores are under a test of `p_x` that always holds, so that
/// written.rs cannot prove them made) and the one with them before
/// (sh_loop_gap: word 40 is never written, thread 0's loop is the lowest to
/// read it, at the load's line).
#[test]
fn a_loop_after_shared_memory_is_all_written_skips_its_notes() {
    let Some(m) = module() else { return };
    let c = cfg([2, 1, 1], [64, 1, 1]);
    let w = checked_wgsl_64(&m, "sh_loop_ok");
    assert!(
        w.contains("if (sh_full) {"),
        "the loop is written twice:\n{w}"
    );
    let cpu = launch(&m, BackendChoice::Cpu, false, "sh_loop_ok", &c, 64).expect("on the CPU");
    let opts = ExecOptions::default();
    for race in [true, false] {
        let gpu = launch_with(&m, BackendChoice::Gpu, "sh_loop_ok", &c, 64, &opts, race)
            .expect("sh_loop_ok on the GPU");
        assert_eq!(gpu, cpu, "race check {race}");
    }
    // Thread t: t + the sum of (i + 7) over i < 64.
    let want: Vec<u8> = (0..64u32).flat_map(|t| (t + 2464).to_le_bytes()).collect();
    assert_eq!(cpu, want);
    same_fault(
        &m,
        "sh_loop_gap",
        &c,
        FaultClass::Uninitialized,
        643,
        [0, 0, 0],
        [0, 0, 0],
    );
}

/// Shared memory proven all written by the first barrier (vgpu-ir's
/// written.rs: every thread stores at `4 · (tid & 63)` before it): no
/// initialisation notes after it and, since nothing reads shared memory
/// before it, no initialisation check at all (no marks of the stores, no
/// shadow bits); the interpreter's values on the GPU.
/// Where the stores leave the odd words unwritten (word `2 · tid` of 128), the proof
/// fails, the notes stay, and thread 1's read is the fault on both backends.
/// Where each thread reads its word before storing it (`sh_cover_early`),
/// the check stays for that read: thread 0's fault on both backends.
#[test]
fn shared_memory_proven_written_before_the_first_barrier_needs_no_notes() {
    let Some(m) = module() else { return };
    let c = cfg([2, 1, 1], [64, 1, 1]);
    let wgsl = |entry: &str| checked_wgsl_64(&m, entry);
    let notes = |entry: &str| wgsl(entry).matches("sh_rd(t").count();
    let marks = |entry: &str| wgsl(entry).matches("sh_wr(t").count();
    assert_eq!(notes("sh_cover_ok"), 0);
    assert_eq!(marks("sh_cover_ok"), 0);
    assert!(!wgsl("sh_cover_ok").contains("wg_init"));
    assert_eq!(notes("sh_cover_gap"), 1);
    assert_eq!(marks("sh_cover_gap"), 1);
    assert_eq!(notes("sh_cover_early"), 1);
    assert_eq!(marks("sh_cover_early"), 1);
    same_fault(
        &m,
        "sh_cover_early",
        &c,
        FaultClass::Uninitialized,
        866,
        [0, 0, 0],
        [0, 0, 0],
    );
    let cpu = launch(&m, BackendChoice::Cpu, false, "sh_cover_ok", &c, 64).expect("on the CPU");
    let gpu = launch(&m, BackendChoice::Gpu, false, "sh_cover_ok", &c, 64).expect("on the GPU");
    assert_eq!(gpu, cpu);
    let want: Vec<u8> = (0..64u32).flat_map(|t| (t + 5).to_le_bytes()).collect();
    assert_eq!(cpu, want);
    same_fault(
        &m,
        "sh_cover_gap",
        &c,
        FaultClass::Uninitialized,
        755,
        [0, 0, 0],
        [1, 0, 0],
    );
}

/// A v4 shared load whose fourth word nvcc marks unused (`used_bytes_mask
/// 4095`, as in CUB's warp-scans block scan) reads no unwritten byte: no
/// fault, the same sums as the interpreter. Without the pragma the same load
/// is an uninitialised read on both backends.
#[test]
fn elements_a_used_bytes_mask_drops_are_not_reads() {
    let Some(m) = module() else { return };
    let c = cfg([1, 1, 1], [64, 1, 1]);
    let cpu =
        launch(&m, BackendChoice::Cpu, false, "sh_unused", &c, 64).expect("sh_unused on the CPU");
    let gpu =
        launch(&m, BackendChoice::Gpu, false, "sh_unused", &c, 64).expect("sh_unused on the GPU");
    assert_eq!(cpu, gpu);
    // Thread 1: 1 + 101 + 1001.
    assert_eq!(cpu[4..8], 1103u32.to_le_bytes());
    same_fault(
        &m,
        "sh_unused_nomask",
        &c,
        FaultClass::Uninitialized,
        233,
        [0, 0, 0],
        [0, 0, 0],
    );
}

/// Launches `entry` with the global-memory initcheck on `backend` over two
/// buffers of `words` words: `x` (host-written, word `i` = `i`) and `y` (the
/// host did not write it); `x` and `y` after the launch, or the error.
fn launch_initcheck(
    m: &Module,
    backend: BackendChoice,
    checked: bool,
    entry: &str,
    cfg: &LaunchConfig,
    words: usize,
) -> Result<Vec<Vec<u8>>, PtxError> {
    let x: Vec<u8> = (0..words as u32).flat_map(u32::to_le_bytes).collect();
    let mut bufs = vec![x, vec![0u8; 4 * words]];
    let opts = ExecOptions {
        initcheck: true,
        uninitialised_buffers: vec![1],
        buffer_names: vec!["x".into(), "y".into()],
        ..ExecOptions::default()
    };
    let args = [KernelArg::Buffer(0), KernelArg::Buffer(1)];
    PtxRunner::new(backend, checked).launch(m, entry, cfg, &args, &mut bufs, &opts)?;
    Ok(bufs)
}

/// The initcheck's fault of `entry` on both backends: the same class, line,
/// block and thread, that is (`line`, `block`, `thread`), and both messages
/// name the byte of `y` (`byte`), its size and whether a read or an atomic
/// (`what`).
fn same_initcheck_fault(
    m: &Module,
    entry: &str,
    cfg: &LaunchConfig,
    (line, block, thread): (u32, [u32; 3], [u32; 3]),
    what: &str,
    byte: u32,
) {
    let f = |b| match launch_initcheck(m, b, true, entry, cfg, 64) {
        Err(PtxError::Fault(f)) => *f,
        Err(e) => panic!("{entry} on {b:?}: expected a fault, got {e}"),
        Ok(_) => panic!("{entry} on {b:?}: expected a fault, it ran to completion"),
    };
    let (cpu, gpu) = (f(BackendChoice::Cpu), f(BackendChoice::Gpu));
    eprintln!("{entry}: cpu {cpu}\n{entry}: gpu {gpu}");
    let key = |f: &Fault| (f.class, f.line, f.block, f.thread);
    assert_eq!(
        key(&cpu),
        (FaultClass::Uninitialized, line, block, thread),
        "{entry} on the CPU"
    );
    assert_eq!(key(&gpu), key(&cpu), "{entry}: the GPU's fault");
    let named = format!("(byte {byte} of `buffer 1 (y)`, 256 bytes at 0x");
    for (b, f) in [("CPU", &cpu), ("GPU", &gpu)] {
        assert!(
            f.detail.starts_with(&format!("{what} global byte 0x")) && f.detail.contains(&named),
            "{entry} on the {b}: {}",
            f.detail
        );
    }
}

/// The global-memory initcheck: a two-byte load whose second byte nothing
/// wrote, by one thread of the second block, in a buffer the host did not
/// write: the interpreter's fault (byte 149 of `y`).
#[test]
fn a_read_of_unwritten_global_memory_is_uninitialized() {
    let Some(m) = module() else { return };
    same_initcheck_fault(
        &m,
        "gi_uninit",
        &cfg([2, 1, 1], [32, 1, 1]),
        (264, [1, 0, 0], [5, 0, 0]),
        "read of",
        149,
    );
}

/// An atomic on a global word nothing wrote faults like a read.
#[test]
fn an_atomic_on_unwritten_global_memory_is_uninitialized() {
    let Some(m) = module() else { return };
    same_initcheck_fault(
        &m,
        "gi_atom_uninit",
        &cfg([1, 1, 1], [32, 1, 1]),
        (282, [0, 0, 0], [3, 0, 0]),
        "atomic on",
        40,
    );
}

/// The correct counterpart: every global byte read was written first (by
/// sub-word, generic and atomic writes, or the host: a host buffer and a
/// module variable): no fault, the same bytes on both backends. Unchecked,
/// the GPU refuses the initcheck.
#[test]
fn reads_of_written_global_memory_are_not_reported() {
    let Some(m) = module() else { return };
    let c = cfg([1, 1, 1], [32, 1, 1]);
    let cpu =
        launch_initcheck(&m, BackendChoice::Cpu, true, "gi_ok", &c, 64).expect("gi_ok on the CPU");
    let gpu =
        launch_initcheck(&m, BackendChoice::Gpu, true, "gi_ok", &c, 64).expect("gi_ok on the GPU");
    assert_eq!(cpu, gpu);
    // Thread 1: y[8..12] = 0x00010101, y[12..16] = 1 + 3, gtab[1] = 20,
    // x[1] = 1, the atomic's old value 1; the red then made y[8..12]
    // 0x00010102.
    assert_eq!(
        cpu[0][4..8],
        (0x0001_0101u32 + 4 + 20 + 1 + 1).to_le_bytes()
    );
    assert_eq!(cpu[1][8..12], 0x0001_0102u32.to_le_bytes());
    let e = launch_initcheck(&m, BackendChoice::Gpu, false, "gi_ok", &c, 64)
        .expect_err("unchecked initcheck on the GPU");
    assert!(e.to_string().contains("initcheck needs the checked"), "{e}");
}

/// A race on the GPU and the interpreter: both report class `race` in block
/// `block`; the thread and line may differ (the second of the two accesses
/// reports, and the GPU's schedule is not the interpreter's warp after warp),
/// but the GPU's is one of `lines` and its message names the hazard.
/// Unchecked, or checked without the race check (which is asked for apart,
/// as compute-sanitizer's racecheck), the GPU runs it to completion.
fn same_race(m: &Module, entry: &str, cfg: &LaunchConfig, block: [u32; 3], lines: &[u32]) {
    let cpu = fault(
        launch(m, BackendChoice::Cpu, false, entry, cfg, 1024),
        entry,
    );
    let gpu = fault(
        launch(m, BackendChoice::Gpu, false, entry, cfg, 1024),
        entry,
    );
    eprintln!("{entry}: cpu {cpu}\n{entry}: gpu {gpu}");
    assert_eq!((cpu.class, cpu.block), (FaultClass::Race, block), "{entry}");
    assert_eq!((gpu.class, gpu.block), (FaultClass::Race, block), "{entry}");
    assert!(
        lines.contains(&gpu.line),
        "{entry}: the GPU's line {}",
        gpu.line
    );
    assert!(
        gpu.detail.contains("hazard on shared byte 0x") && gpu.detail.contains("warp"),
        "{}",
        gpu.detail
    );
    launch(m, BackendChoice::Gpu, true, entry, cfg, 1024)
        .unwrap_or_else(|e| panic!("{entry} unchecked on the GPU: {e}"));
    let opts = ExecOptions::default();
    launch_with(m, BackendChoice::Gpu, entry, cfg, 1024, &opts, false)
        .unwrap_or_else(|e| panic!("{entry} checked without the race check on the GPU: {e}"));
}

/// Threads of two warps read and write each other's words after a barrier
/// with none between: a race (at the read or the write, whichever comes
/// second).
#[test]
fn a_shared_race_between_warps_is_reported() {
    let Some(m) = module() else { return };
    same_race(
        &m,
        "sh_race",
        &cfg([1, 1, 1], [64, 1, 1]),
        [0, 0, 0],
        &[346, 347],
    );
}

/// Three warps read one word and one thread writes it in the same interval:
/// a race whichever warp read first.
#[test]
fn a_write_after_several_warps_read_is_a_race() {
    let Some(m) = module() else { return };
    same_race(
        &m,
        "sh_race_readers",
        &cfg([1, 1, 1], [96, 1, 1]),
        [0, 0, 0],
        &[370, 372],
    );
}

/// The correct counterpart: exchanges between warps across barriers, reads
/// of one word by every warp written after the next barrier, neighbours in
/// a warp after bar.warp.sync, atomics: no race, the same sums.
#[test]
fn shared_accesses_ordered_by_barriers_do_not_race() {
    let Some(m) = module() else { return };
    let c = cfg([2, 1, 1], [64, 1, 1]);
    let cpu =
        launch(&m, BackendChoice::Cpu, false, "sh_race_ok", &c, 64).expect("sh_race_ok on the CPU");
    let gpu =
        launch(&m, BackendChoice::Gpu, false, "sh_race_ok", &c, 64).expect("sh_race_ok on the GPU");
    assert_eq!(cpu, gpu);
    // Thread 1: its neighbour 0's word (thread 32's index + 5) + 100.
    assert_eq!(cpu[4..8], (32u32 + 5 + 100).to_le_bytes());
}

/// A global load site whose region cache holds the buffer (seeded from its
/// pointer parameter, then hit by the thread's earlier loads there): a load
/// one word past the buffer's end and an aligned 8-byte load straddling it
/// fault out of bounds with the interpreter's line, block and thread.
#[test]
fn loads_past_the_end_of_a_cached_region_fault() {
    let Some(m) = module() else { return };
    let c = cfg([1, 1, 1], [64, 1, 1]);
    same_fault(
        &m,
        "gx_tail",
        &c,
        FaultClass::OutOfBounds,
        777,
        [0, 0, 0],
        [0, 0, 0],
    );
    let key = |f: &Fault| (f.class, f.line, f.block, f.thread);
    let on = |backend| {
        fault(
            launch(&m, backend, false, "gx_straddle", &c, 1023),
            "gx_straddle",
        )
    };
    let cpu = on(BackendChoice::Cpu);
    assert_eq!(
        key(&cpu),
        (FaultClass::OutOfBounds, 799, [0, 0, 0], [63, 0, 0]),
        "gx_straddle on the CPU"
    );
    assert_eq!(
        key(&on(BackendChoice::Gpu)),
        key(&cpu),
        "gx_straddle on the GPU"
    );
}

/// A checked kernel with barriers in structured form: thread 37 of each block
/// stores out of bounds between two barriers. The interpreter's fault (block
/// 0, thread 37, the store's line) on the GPU too, where the faulting thread
/// went on to meet the second barrier with the others (else the block would
/// hang).
#[test]
fn a_fault_between_barriers_is_reported_and_the_block_goes_on() {
    let Some(m) = module() else { return };
    assert!(structured_when_checked(&m, "soft_oob", [64, 1, 1]));
    same_fault(
        &m,
        "soft_oob",
        &cfg([2, 1, 1], [64, 1, 1]),
        FaultClass::OutOfBounds,
        449,
        [0, 0, 0],
        [37, 0, 0],
    );
}

/// Two faults of one block in different barrier intervals of a checked
/// kernel in structured form, where the faulting threads go on: a read of
/// unwritten shared memory (judged at the next barrier's release) and an
/// out-of-bounds store, in both orders. The GPU's record is the earlier
/// fault, the interpreter's (the record is taken at the block's end from
/// the faults' times, not by which thread claims it first).
#[test]
fn the_earlier_of_two_faults_between_barriers_is_reported() {
    let Some(m) = module() else { return };
    let c = cfg([2, 1, 1], [64, 1, 1]);
    for (entry, class, line, thread) in [
        ("soft_order_read", FaultClass::Uninitialized, 674, 20),
        ("soft_order_store", FaultClass::OutOfBounds, 700, 37),
    ] {
        assert!(structured_when_checked(&m, entry, [64, 1, 1]));
        same_fault(&m, entry, &c, class, line, [0, 0, 0], [thread, 0, 0]);
    }
}

/// One early fault (thread 63, before the barrier) and 63 late ones in one
/// block: the record is the early one on both backends. The GPU's first
/// run records every faulting thread's fault at once, without the block
/// end's barrier (vgpu-ir's `CfgWgslOptions::earliest_fault` off), and
/// the launch that faulted runs again picking the block's earliest.
#[test]
fn the_earliest_of_many_faults_is_reported_after_a_first_run_without_the_end_barrier() {
    let Some(m) = module() else { return };
    let entry = "soft_late_many";
    assert!(structured_when_checked(&m, entry, [64, 1, 1]));
    let (_, ck) = vgpu::ptx::lower::lower_entry(&m, entry).expect("the kernel lowers");
    let first = CfgWgslOptions {
        earliest_fault: false,
        ..CfgWgslOptions::plain([64, 1, 1], true)
    };
    let no_race = CfgChecks {
        initcheck: false,
        race: false,
    };
    let w = vgpu_ir::wgsl::cfg::emit_cfg_kernel(&ck, &first, no_race).expect("WGSL");
    assert!(
        w.first_pass && !w.text.contains("atomicMax(&wg_fmin"),
        "{}",
        w.text
    );
    same_fault(
        &m,
        entry,
        &cfg([1, 1, 1], [64, 1, 1]),
        FaultClass::OutOfBounds,
        1062,
        [0, 0, 0],
        [63, 0, 0],
    );
}

/// The watchdog in the structured form of kernels with barriers: one thread
/// spinning before a barrier (it leaves its loop for the barrier), every
/// thread looping through a barrier, and a loop whose barrier no iteration
/// meets (its uniform count of iterations ends it), and a loop through a
/// barrier where one thread passes the limit and the loop ends on its own
/// before that thread's out-of-bounds store (the watchdog's fault, noted in
/// the loop, is taken before the store's). A watchdog fault on both
/// backends, the spinning (or over-counting) thread's on the GPU.
#[test]
fn the_watchdog_ends_loops_in_checked_kernels_with_barriers() {
    let Some(m) = module() else { return };
    let opts = ExecOptions {
        check: true,
        watchdog: 20_000,
        ..ExecOptions::default()
    };
    let c = cfg([1, 1, 1], [64, 1, 1]);
    for (entry, thread) in [
        ("soft_spin", Some([5, 0, 0])),
        ("soft_bar_spin", None),
        ("soft_bar_skip", None),
        ("soft_wd_then_oob", Some([5, 0, 0])),
    ] {
        assert!(structured_when_checked(&m, entry, [64, 1, 1]), "{entry}");
        let cpu = fault(
            launch_with(&m, BackendChoice::Cpu, entry, &c, 64, &opts, true),
            entry,
        );
        let gpu = fault(
            launch_with(&m, BackendChoice::Gpu, entry, &c, 64, &opts, true),
            entry,
        );
        eprintln!("{entry}: cpu {cpu}\n{entry}: gpu {gpu}");
        assert_eq!(cpu.class, FaultClass::Watchdog, "{entry} on the CPU");
        assert_eq!(gpu.class, FaultClass::Watchdog, "{entry} on the GPU");
        assert_eq!(gpu.block, [0, 0, 0], "{entry}");
        if let Some(t) = thread {
            assert_eq!(gpu.thread, t, "{entry}");
        }
    }
}

/// A halving loop through a barrier (vgpu-ir's wgsl/cfg/bounded.rs) ends
/// on its own: its checked WGSL counts its instructions but tests no
/// watchdog and keeps no iteration count, and it runs to the interpreter's
/// bytes; the same loop shifting arithmetically keeps the watchdog.
#[test]
fn a_halving_loop_needs_no_watchdog_test() {
    let Some(m) = module() else { return };
    let w = checked_wgsl_64(&m, "soft_halving");
    assert!(w.contains("fn run_thread("), "{w}");
    assert!(w.contains("steps = steps + "), "{w}");
    assert!(!w.contains("raise_if(steps"), "{w}");
    assert!(!w.contains("if (steps > words[1])"), "{w}");
    assert!(!w.contains("var it"), "{w}");
    let w = checked_wgsl_64(&m, "soft_halving_s");
    assert!(w.contains("raise_if(steps > words[1], 3u, "), "{w}");
    assert!(w.contains("var it"), "{w}");
    let c = cfg([1, 1, 1], [64, 1, 1]);
    let cpu = launch(&m, BackendChoice::Cpu, false, "soft_halving", &c, 1).expect("CPU");
    let gpu = launch(&m, BackendChoice::Gpu, false, "soft_halving", &c, 1).expect("GPU");
    assert_eq!(cpu, 2016u32.to_le_bytes(), "the interpreter's sum");
    assert_eq!(gpu, cpu, "the GPU's sum");
}

/// The watchdog where a fault ends the thread (a kernel without barriers in
/// the structured form): thread 5 spins, and both backends report a
/// watchdog fault of block 0, the GPU thread 5's.
#[test]
fn the_watchdog_ends_a_spinning_thread_without_barriers() {
    let Some(m) = module() else { return };
    assert!(structured_when_checked(&m, "spin", [64, 1, 1]));
    let w = checked_wgsl_64(&m, "spin");
    assert!(w.contains("if (steps > words[1]) { g_wd = "), "{w}");
    let opts = ExecOptions {
        check: true,
        watchdog: 20_000,
        ..ExecOptions::default()
    };
    let c = cfg([1, 1, 1], [64, 1, 1]);
    let cpu = fault(
        launch_with(&m, BackendChoice::Cpu, "spin", &c, 1, &opts, false),
        "spin",
    );
    let gpu = fault(
        launch_with(&m, BackendChoice::Gpu, "spin", &c, 1, &opts, false),
        "spin",
    );
    assert_eq!(cpu.class, FaultClass::Watchdog, "on the CPU: {cpu}");
    assert_eq!(gpu.class, FaultClass::Watchdog, "on the GPU: {gpu}");
    assert_eq!((gpu.block, gpu.thread), ([0, 0, 0], [5, 0, 0]), "{gpu}");
    assert_eq!(gpu.line, cpu.line, "the loop's line on both");
    // A loop of one branch (a header without statements): still a fault.
    let gpu = fault(
        launch_with(&m, BackendChoice::Gpu, "spin_bare", &c, 1, &opts, false),
        "spin_bare",
    );
    assert_eq!(
        gpu.class,
        FaultClass::Watchdog,
        "spin_bare on the GPU: {gpu}"
    );
    assert_eq!((gpu.block, gpu.thread), ([0, 0, 0], [5, 0, 0]), "{gpu}");
}

/// A load through the region cache that the global sites past sixteen share
/// (vgpu-ir's access.rs: its fast path covers accesses of up to 16 bytes,
/// so a word in the region's last 15 bytes takes the table search): the
/// last words of the buffer read the interpreter's values, fast path or
/// not, and the word one past its end faults at the load's line.
#[test]
fn the_shared_region_cache_reads_a_regions_last_words_and_faults_past_them() {
    let Some(m) = module() else { return };
    let w = checked_wgsl_64(&m, "gx_shared_tail");
    assert!(w.contains("&gc15, 4u)") && w.contains("&gc_r, 16u)"), "{w}");
    let c = cfg([1, 1, 1], [16, 1, 1]);
    let words: Vec<u8> = (0..1024u32)
        .flat_map(|i| (3 * i + 1).to_le_bytes())
        .collect();
    let run = |backend, i: u32| {
        let mut bufs = vec![words.clone()];
        let opts = ExecOptions::default();
        let mut runner = PtxRunner::new(backend, true);
        let args = [KernelArg::Buffer(0), KernelArg::U32(i)];
        runner
            .launch(&m, "gx_shared_tail", &c, &args, &mut bufs, &opts)
            .map(|_| bufs.swap_remove(0))
    };
    for i in [1019, 1020, 1021, 1023] {
        let cpu = run(BackendChoice::Cpu, i).expect("on the CPU");
        let gpu = run(BackendChoice::Gpu, i).expect("on the GPU");
        assert_eq!(cpu, gpu, "word {i}");
        let sum = (0..16u32).map(|k| 3 * k + 1).sum::<u32>() + 3 * i + 1;
        assert_eq!(cpu[64..68], sum.to_le_bytes(), "word {i}");
    }
    let key = |f: &Fault| (f.class, f.line, f.block, f.thread);
    let cpu = fault(run(BackendChoice::Cpu, 1024), "word 1024 on the CPU");
    assert_eq!(
        key(&cpu),
        (FaultClass::OutOfBounds, 1022, [0, 0, 0], [0, 0, 0])
    );
    let gpu = fault(run(BackendChoice::Gpu, 1024), "word 1024 on the GPU");
    assert_eq!(key(&gpu), key(&cpu));
}
