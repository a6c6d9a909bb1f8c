//! Bad input is a typed error naming the shapes, on the CPU and on the GPU.

mod common;
use vgpu_gpu::{BackendChoice, GpuError, VgpuCache};

fn check_all(cache: &mut VgpuCache) {
    let a = vec![1.0f32; 6];
    let b = vec![1.0f32; 6];
    // Inner dimensions differ: (2×3)·(2×3).
    let e = cache.matmul(&a, (2, 3), &b, (2, 3)).unwrap_err();
    assert_eq!(
        e,
        GpuError::ShapeMismatch {
            a: (2, 3),
            b: (2, 3)
        }
    );
    assert!(e.to_string().contains("A is 2×3 but B is 2×3"), "{e}");
    // Empty matrices.
    let e = cache.matmul(&[], (0, 3), &b, (3, 2)).unwrap_err();
    assert_eq!(
        e,
        GpuError::EmptyMatrix {
            operand: "A",
            shape: (0, 3)
        }
    );
    assert!(e.to_string().contains("A is empty (0×3)"), "{e}");
    let e = cache.matmul(&a, (2, 3), &[], (3, 0)).unwrap_err();
    assert_eq!(
        e,
        GpuError::EmptyMatrix {
            operand: "B",
            shape: (3, 0)
        }
    );
    // Data length ≠ shape.
    let e = cache.matmul(&a, (2, 4), &b, (4, 2)).unwrap_err();
    assert_eq!(
        e,
        GpuError::DataLength {
            operand: "A",
            shape: (2, 4),
            len: 6,
            expected: 8
        }
    );
    assert!(
        e.to_string()
            .contains("A has 6 elements but its stated shape 2×4 needs 8"),
        "{e}"
    );
    let e = cache.matmul(&a, (2, 3), &b, (3, 3)).unwrap_err();
    assert_eq!(
        e,
        GpuError::DataLength {
            operand: "B",
            shape: (3, 3),
            len: 6,
            expected: 9
        }
    );
    // Overflowing shapes.
    let e = cache.matmul(&a, (usize::MAX, 2), &b, (2, 3)).unwrap_err();
    assert!(
        matches!(e, GpuError::TooLarge { operand: "A", .. }),
        "{e:?}"
    );
    // A wrong output length in matmul_into.
    let mut c = vec![0.0f32; 5];
    let e = cache
        .matmul_into(&a, (2, 3), &b, (3, 2), &mut c)
        .unwrap_err();
    assert!(
        matches!(e, GpuError::DataLength { operand: "C", .. }),
        "{e:?}"
    );
    // ndarray: mismatched views.
    let x = ndarray::Array2::<f32>::zeros((2, 3));
    let e = cache.matmul_nd(x.view(), x.view()).unwrap_err();
    assert_eq!(
        e,
        GpuError::ShapeMismatch {
            a: (2, 3),
            b: (2, 3)
        }
    );
    // No call was counted: bad input never reaches an executor.
    let st = cache.stats();
    assert_eq!(st.gpu_dispatches + st.cpu_fallbacks, 0);
}

#[test]
fn bad_input_is_typed_on_the_cpu() {
    let mut cache = VgpuCache::with_backend(BackendChoice::Cpu).unwrap();
    check_all(&mut cache);
}

#[test]
fn bad_input_is_typed_on_the_gpu() {
    let Some(mut cache) = common::gpu_cache("bad_input_is_typed_on_the_gpu") else {
        return;
    };
    check_all(&mut cache);
}

#[test]
fn bad_backend_names_are_typed() {
    let e = "tpu".parse::<BackendChoice>().unwrap_err();
    assert!(e.to_string().contains("VGPU_BACKEND=\"tpu\""), "{e}");
    assert_eq!("GPU".parse::<BackendChoice>().unwrap(), BackendChoice::Gpu);
    let e = "128x128x16x8".parse::<vgpu_gpu::Tile>().unwrap_err();
    assert!(e.reason.contains("five positive integers"), "{e}");
    assert!(matches!(GpuError::from(e), GpuError::BadTile { .. }));
    let e = "128x128x16x8x6".parse::<vgpu_gpu::Tile>().unwrap_err();
    assert!(e.to_string().contains("multiples of 4"), "{e}");
}
