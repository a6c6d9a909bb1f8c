//! `.npy` files of any [`Dtype`] as raw little-endian bytes: what `vgpu ptx
//! run FILE.ptx` reads and writes for its buffers and what the shard merger
//! creates, through `ndarray-npy`, dispatched once on the one vocabulary of
//! element types.

use std::fs::File;
use std::io::{BufReader, Seek};
use std::path::Path;

use ndarray::{ArrayD, IxDyn};
use ndarray_npy::npy::header::Header;
use ndarray_npy::{write_npy, write_zeroed_npy, ReadNpyExt};
use vgpu_field::Dtype;

/// Calls `$body` with `$T` the Rust type of `$dtype` (every type but `f16`,
/// which `ndarray-npy` does not read or write; `$f16` then).
macro_rules! by_dtype {
    ($dtype:expr, $T:ident => $body:expr, f16 => $f16:expr) => {
        by_dtype!(@arms $dtype, $T, $body, $f16;
            F32 f32, F64 f64, I8 i8, I16 i16, I32 i32, I64 i64, U8 u8, U16 u16, U32 u32, U64 u64)
    };
    (@arms $dtype:expr, $T:ident, $body:expr, $f16:expr; $($v:ident $t:ty),*) => {
        match $dtype {
            $(Dtype::$v => {
                type $T = $t;
                $body
            })*
            Dtype::F16 => $f16,
        }
    };
}

const NO_F16: &str = "f16 .npy files are not supported (pass the buffer as a .bin file)";

/// The element type, shape and little-endian bytes (in C order, whatever
/// the file's order) of the `.npy` at `path` (the caller has checked its
/// size against its limits).
///
/// # Errors
/// A message (without the path) for a file that is not a little-endian
/// `.npy` of a [`Dtype`] `ndarray-npy` reads.
pub fn read_bytes(path: &Path) -> Result<(Dtype, Vec<u8>, Vec<usize>), String> {
    let mut f = File::open(path).map_err(|e| e.to_string())?;
    let h = Header::from_reader(&mut f).map_err(|e| format!("not a .npy file: {e}"))?;
    let descr = h.type_descriptor.to_string();
    let dtype = Dtype::from_npy_descr(&descr).ok_or_else(|| {
        format!(
            "element type {descr} is not one of the little-endian {}",
            Dtype::ALL.map(Dtype::npy_descr).join(", ")
        )
    })?;
    // The data through the same handle, from the start again.
    f.rewind().map_err(|e| e.to_string())?;
    by_dtype!(dtype, T => {
        let a = ArrayD::<T>::read_npy(BufReader::new(&mut f)).map_err(|e| e.to_string())?;
        let shape = a.shape().to_vec();
        let bytes = a.iter().flat_map(|v| v.to_le_bytes()).collect();
        Ok((dtype, bytes, shape))
    }, f16 => Err(NO_F16.into()))
}

/// Writes `bytes` (little-endian elements of `dtype`) as an `.npy` of `shape`.
///
/// # Errors
/// A message when the bytes do not fill `shape` or the file cannot be written.
pub fn write_bytes(path: &Path, dtype: Dtype, bytes: &[u8], shape: &[usize]) -> Result<(), String> {
    by_dtype!(dtype, T => {
        let es = std::mem::size_of::<T>();
        if bytes.len() % es != 0 {
            return Err(format!("{} bytes are not whole {dtype} elements", bytes.len()));
        }
        let v: Vec<T> = bytes
            .chunks_exact(es)
            .map(|c| {
                let mut b = [0u8; std::mem::size_of::<T>()];
                b.copy_from_slice(c);
                T::from_le_bytes(b)
            })
            .collect();
        let a = ArrayD::from_shape_vec(shape.to_vec(), v).map_err(|e| e.to_string())?;
        write_npy(path, &a).map_err(|e| e.to_string())
    }, f16 => Err(NO_F16.into()))
}

/// Writes `file` as a zeroed `.npy` of `dtype` and `shape` (its data not
/// written: a sparse file where the file system allows).
///
/// # Errors
/// The writer's message.
pub fn write_zeroed(file: &File, dtype: Dtype, shape: &[usize]) -> Result<(), String> {
    by_dtype!(dtype, T => {
        write_zeroed_npy::<T, _>(file, IxDyn(shape)).map_err(|e| e.to_string())
    }, f16 => Err(NO_F16.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ShapeBuilder;
    use ndarray_npy::WritableElement;

    #[test]
    fn descriptors_are_ndarray_npys() {
        fn d<T: WritableElement>() -> String {
            T::type_descriptor().to_string()
        }
        let want = [
            (Dtype::F32, d::<f32>()),
            (Dtype::F64, d::<f64>()),
            (Dtype::I8, d::<i8>()),
            (Dtype::I16, d::<i16>()),
            (Dtype::I32, d::<i32>()),
            (Dtype::I64, d::<i64>()),
            (Dtype::U8, d::<u8>()),
            (Dtype::U16, d::<u16>()),
            (Dtype::U32, d::<u32>()),
            (Dtype::U64, d::<u64>()),
        ];
        for (dt, descr) in want {
            assert_eq!(format!("'{}'", dt.npy_descr()), descr, "{dt}");
            assert_eq!(Dtype::from_npy_descr(&descr), Some(dt));
        }
    }

    #[test]
    fn every_type_round_trips_through_a_file() {
        let dir = std::env::temp_dir().join(format!("vgpu-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for dt in Dtype::ALL {
            let p = dir.join(format!("{dt}.npy"));
            let bytes: Vec<u8> = (0..6 * dt.size()).map(|i| (i * 37 + 5) as u8).collect();
            if dt == Dtype::F16 {
                assert_eq!(write_bytes(&p, dt, &bytes, &[2, 3]).unwrap_err(), NO_F16);
                continue;
            }
            write_bytes(&p, dt, &bytes, &[2, 3]).unwrap();
            assert_eq!(read_bytes(&p).unwrap(), (dt, bytes.clone(), vec![2, 3]));
            let e = write_bytes(&p, dt, &bytes, &[4, 3]).unwrap_err();
            assert!(!e.is_empty());
        }
        // A Fortran-order file comes back in C order.
        let p = dir.join("f.npy");
        let c = ndarray::arr2(&[[1u32, 2, 3], [4, 5, 6]]);
        let mut fo = ndarray::Array2::<u32>::zeros((2, 3).f());
        fo.assign(&c);
        write_npy(&p, &fo).unwrap();
        let (dt, bytes, shape) = read_bytes(&p).unwrap();
        let want: Vec<u8> = (1u32..=6).flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!((dt, bytes, shape), (Dtype::U32, want, vec![2, 3]));
        std::fs::write(&p, b"not numpy").unwrap();
        assert!(read_bytes(&p).unwrap_err().contains("not a .npy"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
