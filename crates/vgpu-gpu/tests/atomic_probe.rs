//! The f32 atomic-add probe (`vgpu_gpu::atomic_probe`) and the kernel cache's
//! alias bindings it and compiled PTX rely on: an alias is a second view of
//! an earlier buffer (writes through it come back in the target's download),
//! a bad alias is a typed error, the probe's mismatches are real (the device
//! gives the same bits again) and its verdict is kept; without
//! `SHADER_FLOAT32_ATOMIC` the verdict is "no". Skipped without an adapter
//! unless `VGPU_REQUIRE_GPU=1`.

mod common;

use vgpu_gpu::atomic_probe::{atomic_add_on_device, ptx_atomic_add_f32};
use vgpu_gpu::{f32_atomic_add_exact, probe_atomic_add_f32, Binding, GpuError, KernelSpec};

/// `w[i] += 1` through binding 0 as `u32`, then `v[i] = 2 * v[i]` through
/// binding 1, an alias of binding 0 viewed as `f32`.
const TWO_VIEWS: &str = "
@group(0) @binding(0) var<storage, read_write> w: array<u32>;
@group(0) @binding(1) var<storage, read_write> v: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let i = id.x;
  if (i >= arrayLength(&w)) { return; }
  w[i] = w[i] + 1u;
  v[i] = 2.0 * v[i];
}
";

#[test]
fn an_alias_is_a_second_view_of_the_same_buffer() {
    let Some(mut cache) = common::kernel_cache("atomic_probe") else {
        return;
    };
    let spec = KernelSpec::new("two_views", TWO_VIEWS, "main").workgroup_size([64, 1, 1]);
    // 0.5f32 is 0x3f000000; +1 as bits, then doubled as f32.
    let mut data = vec![0.5f32.to_bits(); 100];
    cache
        .dispatch(
            &spec,
            &mut [Binding::read_write(&mut data), Binding::Alias(0)],
            [2, 1, 1],
        )
        .unwrap();
    let want = (2.0 * f32::from_bits(0.5f32.to_bits() + 1)).to_bits();
    assert!(
        data.iter().all(|&x| x == want),
        "{:08x} vs {want:08x}",
        data[0]
    );
    // An alias of itself, of a later binding, or of a read-only one.
    for (bad, index) in [(1usize, 1usize), (2, 1)] {
        let mut d = vec![0u32; 4];
        let e = cache
            .dispatch(
                &spec,
                &mut [Binding::read_write(&mut d), Binding::Alias(bad)],
                [1, 1, 1],
            )
            .unwrap_err();
        match e {
            GpuError::Binding {
                index: i, reason, ..
            } => {
                assert_eq!(i, index);
                assert!(reason.contains("alias"), "{reason}");
            }
            e => panic!("{e}"),
        }
    }
    let r = [0u32; 4];
    let e = cache
        .dispatch(
            &spec,
            &mut [Binding::read(&r), Binding::Alias(0)],
            [1, 1, 1],
        )
        .unwrap_err();
    assert!(e.to_string().contains("alias"), "{e}");
}

#[test]
fn the_probe_verdict_is_real_and_kept() {
    let Some(mut cache) = common::kernel_cache("atomic_probe") else {
        return;
    };
    let ctx = cache.context();
    if !ctx.has_f32_atomic_add() {
        eprintln!("{}: no SHADER_FLOAT32_ATOMIC", ctx.adapter());
        assert!(!f32_atomic_add_exact(ctx).unwrap());
        assert!(probe_atomic_add_f32(ctx).is_err());
        return;
    }
    let probe = probe_atomic_add_f32(ctx).unwrap();
    eprintln!(
        "{}: f32 atomic add: {} of {} pairs differ from PTX's, first {:?}",
        ctx.adapter(),
        probe.mismatches,
        probe.pairs,
        probe.first
    );
    // Plain sums of normal numbers, no tie: every device adds those alike.
    let plain = [[1.0f32, 2.0], [-3.5, 0.25], [1e30, 1e30], [6.0, -6.0]];
    let got = atomic_add_on_device(&mut cache, &plain).unwrap();
    for (p, g) in plain.iter().zip(&got) {
        assert_eq!(*g, ptx_atomic_add_f32(p[0], p[1]).to_bits(), "{p:?}");
    }
    if let Some((ab, bits, want)) = probe.first {
        assert_ne!(bits, want);
        let again = atomic_add_on_device(&mut cache, &[ab]).unwrap();
        assert_eq!(
            again,
            [bits],
            "{ab:?}: the device's atomic add is not repeatable"
        );
    } else {
        assert!(probe.exact() && probe.pairs > 4000);
    }
    assert_eq!(f32_atomic_add_exact(ctx).unwrap(), probe.exact());
    assert_eq!(f32_atomic_add_exact(ctx).unwrap(), probe.exact(), "kept");
}
