//! `.npy` seeds (written by `ndarray_npy`, so well formed) and their
//! structure-aware mutations: the header's shape, element type, order and
//! length field, the format version, the data's length, and byte flips.

use crate::mutate::mutate_bytes;
use crate::rng::Rng;
use ndarray::{Array, ArrayD, IxDyn, ShapeBuilder};
use ndarray_npy::WriteNpyExt;

/// Small arrays of every element type the CLI reads, 0-D to 3-D, C and
/// Fortran order, as `.npy` bytes.
pub fn seeds() -> Vec<Vec<u8>> {
    fn npy<T: ndarray_npy::WritableElement + Clone>(a: &ArrayD<T>) -> Vec<u8> {
        let mut v = Vec::new();
        a.write_npy(&mut v).expect("an in-memory .npy");
        v
    }
    let shapes: &[&[usize]] = &[&[], &[0], &[5], &[2, 3], &[2, 2, 2]];
    let mut out = Vec::new();
    for (si, &s) in shapes.iter().enumerate() {
        let len: usize = s.iter().product();
        let f: Vec<f64> = (0..len).map(|i| i as f64 * 0.5 - 1.0).collect();
        let sh = IxDyn(s);
        out.push(npy(&Array::from_shape_vec(
            sh.clone(),
            f.iter().map(|&x| x as f32).collect(),
        )
        .unwrap()));
        out.push(npy(&Array::from_shape_vec(sh.clone(), f.clone()).unwrap()));
        out.push(npy(&Array::from_shape_vec(
            sh.clone(),
            (0..len as i32).collect(),
        )
        .unwrap()));
        if si % 2 == 0 {
            out.push(npy(&Array::from_shape_vec(
                sh.clone(),
                (0..len as u32).collect(),
            )
            .unwrap()));
            out.push(npy(&Array::from_shape_vec(
                sh.clone(),
                (0..len as i64).collect(),
            )
            .unwrap()));
            out.push(npy(&Array::from_shape_vec(
                sh.clone(),
                (0..len as u8).collect(),
            )
            .unwrap()));
        } else {
            out.push(npy(&Array::from_shape_vec(
                sh.clone(),
                (0..len as u64).collect(),
            )
            .unwrap()));
            out.push(npy(&Array::from_shape_vec(
                sh.clone(),
                (0..len as i8).collect(),
            )
            .unwrap()));
        }
        if s.len() >= 2 {
            let fa = Array::from_shape_vec(sh.f(), f.clone()).unwrap();
            out.push(npy(&fa));
        }
    }
    out
}

/// The parts of a `.npy` file: version byte, header text, data.
struct Parts {
    version: u8,
    header: String,
    data: Vec<u8>,
}

fn split(b: &[u8]) -> Option<Parts> {
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return None;
    }
    let version = b[6];
    let (start, len): (usize, usize) = if version == 1 {
        (10, u16::from_le_bytes([b[8], b[9]]) as usize)
    } else {
        let l = b.get(8..12)?;
        (12, u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)
    };
    let header = String::from_utf8(b.get(start..start.checked_add(len)?)?.to_vec()).ok()?;
    Some(Parts {
        version,
        header,
        data: b[start + len..].to_vec(),
    })
}

fn join(p: &Parts, len_override: Option<u64>) -> Vec<u8> {
    let mut v = b"\x93NUMPY".to_vec();
    v.push(p.version);
    v.push(0);
    let len = len_override.unwrap_or(p.header.len() as u64);
    if p.version == 1 {
        v.extend_from_slice(&(len as u16).to_le_bytes());
    } else {
        v.extend_from_slice(&(len as u32).to_le_bytes());
    }
    v.extend_from_slice(p.header.as_bytes());
    v.extend_from_slice(&p.data);
    v
}

const SHAPES: &[&str] = &[
    "()",
    "(0,)",
    "(1,)",
    "(-1,)",
    "(18446744073709551615,)",
    "(18446744073709551616,)",
    "(4294967296, 4294967296)",
    "(4294967296, 4294967296, 4294967296)",
    "(2, 0, 18446744073709551615)",
    "(1000000000,)",
    "(3, 3)",
    "(5, )",
    "(5,,)",
    "(,)",
    "(5",
    "5",
    "[5]",
    "(1e3,)",
    "(0x10,)",
    "(2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33)",
];

const DESCRS: &[&str] = &[
    "'<f4'",
    "'<f8'",
    "'>f4'",
    "'>f8'",
    "'<i4'",
    "'<u4'",
    "'<i8'",
    "'<u8'",
    "'|u1'",
    "'|i1'",
    "'<f2'",
    "'<c16'",
    "'|O'",
    "'|b1'",
    "'<U8'",
    "'|V16'",
    "'<i0'",
    "'<f99999999999'",
    "''",
    "'f4'",
    "[('a', '<f4')]",
    "'<M8[s]'",
];

/// A mutant of the `.npy` bytes `seed`: 1 to 3 mutations of its header, its
/// data or its bytes.
pub fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for _ in 0..1 + rng.below(3) {
        let Some(mut p) = split(&bytes) else {
            mutate_bytes(&mut bytes, rng);
            continue;
        };
        let mut len = None;
        match rng.below(10) {
            0 | 1 => {
                if let (Some(a), Some(b)) = (p.header.find("'shape': "), p.header.rfind(')')) {
                    if a + 9 <= b {
                        let shape = *rng.pick(SHAPES);
                        p.header.replace_range(a + 9..=b, shape);
                    }
                }
            }
            2 | 3 => {
                if let Some(a) = p.header.find("'descr': ") {
                    let s = a + 9;
                    let e = p.header[s..].find(',').map_or(p.header.len(), |e| s + e);
                    let descr = *rng.pick(DESCRS);
                    p.header.replace_range(s..e, descr);
                }
            }
            4 => {
                let (a, b) = *rng.pick(&[
                    ("False", "True"),
                    ("True", "False"),
                    ("False", "0"),
                    ("'descr'", "'desc'"),
                    ("'shape'", "'shap'"),
                    ("{", ""),
                    ("}", "}}"),
                    ("'", "\""),
                ]);
                p.header = p.header.replacen(a, b, 1);
            }
            5 => p.version = *rng.pick(&[0, 1, 2, 3, 4, 255]),
            6 => {
                len =
                    Some(*rng.pick(&[0, 1, 9, 65535, 65536, u32::MAX as u64]) ^ rng.below(2) as u64)
            }
            7 => {
                let n = rng.below(p.data.len() + 1);
                p.data.truncate(n);
            }
            8 => {
                let n = *rng.pick(&[1usize, 7, 8, 4096]);
                p.data.extend(std::iter::repeat_n(0xa5, n));
            }
            _ => {
                let mut h = p.header.into_bytes();
                mutate_bytes(&mut h, rng);
                p.header = String::from_utf8_lossy(&h).into_owned();
            }
        }
        bytes = join(&p, len);
        if rng.one_in(8) {
            mutate_bytes(&mut bytes, rng);
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_split_and_join_back() {
        let s = seeds();
        assert!(s.len() >= 30, "{}", s.len());
        for b in &s {
            let p = split(b).expect("a seed is a .npy");
            assert!(p.header.contains("'shape'"));
            assert_eq!(&join(&p, None), b);
        }
        let m: Vec<Vec<u8>> = (0..200)
            .map(|i| mutate(&s[3], &mut Rng::for_input(2, i)))
            .collect();
        assert!(m.iter().filter(|x| **x != s[3]).count() > 150);
    }
}
