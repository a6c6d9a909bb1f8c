//! Hostile case.json files (issue 15): sizes checked before allocation, files
//! read only when regular and never past their declared size, files confined
//! to the case's folder and its parent, and no error that prints a file's
//! contents.

use std::path::{Path, PathBuf};

use vgpu_ptx::{run_case, run_case_with, CaseOptions, ExecOptions, Limits, PtxError};

/// `out[gid] = gid` for `gid < n`.
const IOTA: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry iota(.param .u64 pout, .param .u32 pn)\n{\n\
.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n.reg .pred %p;\n\
ld.param.u64 %rd1, [pout];\nld.param.u32 %r5, [pn];\n\
mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\n\
mad.lo.s32 %r4, %r2, %r3, %r1;\nsetp.ge.u32 %p, %r4, %r5;\n@%p ret;\n\
mul.wide.u32 %rd2, %r4, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r4;\nret;\n}\n";

const SECRET: &str = "TOPSECRET-contents 42\n";

/// A fresh folder `root/`, holding `kernels.ptx`, `outside/secret.txt` and
/// the case folder `root/cases/c/` (whose parent is `root/cases/`).
struct Tree {
    root: PathBuf,
}

impl Tree {
    fn new(tag: &str) -> Tree {
        let root =
            std::env::temp_dir().join(format!("vgpu-ptx-hostile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("cases/c")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::write(root.join("cases/kernels.ptx"), IOTA).unwrap();
        std::fs::write(root.join("outside/secret.txt"), SECRET).unwrap();
        std::fs::write(root.join("outside/kernels.ptx"), IOTA).unwrap();
        Tree { root }
    }
    fn case(&self) -> PathBuf {
        self.root.join("cases/c/case.json")
    }
    fn write_case(&self, ptx: &str, buffers: &str) {
        let json = format!(
            r#"{{"ptx": "{ptx}", "entry": "iota", "grid": [2,1,1], "block": [32,1,1],
               "args": [{{"kind": "buffer", "name": "out"}}, {{"kind": "scalar", "type": "u32", "value": 64}}],
               "buffers": {{{buffers}}}, "exact": true}}"#
        );
        std::fs::write(self.case(), json).unwrap();
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn small() -> ExecOptions {
    ExecOptions {
        limits: Limits {
            max_memory: 64 << 20,
            max_threads: 1 << 32,
        },
        ..ExecOptions::default()
    }
}

fn err(r: Result<vgpu_ptx::CaseReport, PtxError>) -> String {
    match r {
        Ok(rep) => panic!("the case ran: {:?}", rep.error),
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains("TOPSECRET"), "the error quotes the file: {s}");
            s
        }
    }
}

#[test]
fn a_good_case_with_a_shared_module_in_the_parent_passes() {
    let t = Tree::new("good");
    let want: Vec<u8> = (0..64u32).flat_map(|i| i.to_le_bytes()).collect();
    std::fs::write(t.root.join("cases/c/want.bin"), &want).unwrap();
    t.write_case(
        "../kernels.ptx",
        r#""out": {"dtype": "u32", "len": 64, "expect": "want.bin"}"#,
    );
    let r = run_case(&t.case(), &small()).unwrap();
    assert!(r.passed(), "{:?}", r.buffers);
}

#[test]
fn huge_buffer_lengths_are_refused_before_allocation() {
    let t = Tree::new("huge");
    t.write_case(
        "../kernels.ptx",
        r#""out": {"dtype": "u32", "len": 10000000000}"#,
    );
    let s = err(run_case(&t.case(), &small()));
    assert!(
        s.contains("buffer `out`") && s.contains("37.3 GiB") && s.contains("--max-memory"),
        "{s}"
    );
    // 2^62 × 8 bytes wraps to 0 in unchecked arithmetic.
    t.write_case(
        "../kernels.ptx",
        r#""out": {"dtype": "u64", "len": 4611686018427387904}"#,
    );
    let s = err(run_case(&t.case(), &ExecOptions::default()));
    assert!(s.contains("buffer `out`") && s.contains("2^64"), "{s}");
    // Each fits; together they do not.
    t.write_case(
        "../kernels.ptx",
        r#""out": {"dtype": "u8", "len": 40000000}, "b": {"dtype": "u8", "len": 40000000}"#,
    );
    let s = err(run_case(&t.case(), &small()));
    assert!(
        s.contains("the buffers") && s.contains("--max-memory"),
        "{s}"
    );
}

#[test]
fn devices_and_oversized_files_are_not_read() {
    let t = Tree::new("dev");
    t.write_case(
        "../kernels.ptx",
        r#""out": {"dtype": "u32", "len": 64, "init": "/dev/zero"}"#,
    );
    let all = CaseOptions {
        allow_outside: true,
    };
    let s = err(run_case_with(&t.case(), &small(), &all));
    assert!(s.contains("not a regular file"), "{s}");
    // A longer init file is read no further than the declared 256 bytes.
    std::fs::write(t.root.join("cases/c/long.bin"), vec![1u8; 4096]).unwrap();
    t.write_case(
        "../kernels.ptx",
        r#""out": {"dtype": "u32", "len": 64, "init": "long.bin"}"#,
    );
    let s = err(run_case(&t.case(), &small()));
    assert!(s.contains("init") && s.contains("256 B"), "{s}");
    // The case.json itself.
    let s = err(run_case(Path::new("/dev/zero"), &small()));
    assert!(s.contains("not a regular file"), "{s}");
    let big = t.root.join("cases/c/big.json");
    std::fs::write(&big, vec![b' '; (16 << 20) + 1]).unwrap();
    let s = err(run_case(&big, &small()));
    assert!(s.contains("16.0 MiB"), "{s}");
}

#[test]
fn files_outside_the_case_are_refused_and_never_quoted() {
    let t = Tree::new("outside");
    let buf = r#""out": {"dtype": "u32", "len": 64}"#;
    // An absolute path, a relative path climbing out, and a symbolic link.
    let secret = t.root.join("outside/secret.txt");
    t.write_case(&secret.display().to_string(), buf);
    let s = err(run_case(&t.case(), &small()));
    assert!(
        s.contains("outside the case's folder") && s.contains("--allow-outside"),
        "{s}"
    );
    t.write_case("../../outside/kernels.ptx", buf);
    let s = err(run_case(&t.case(), &small()));
    assert!(s.contains("outside the case's folder"), "{s}");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&secret, t.root.join("cases/c/link.ptx")).unwrap();
        t.write_case("link.ptx", buf);
        let s = err(run_case(&t.case(), &small()));
        assert!(s.contains("outside the case's folder"), "{s}");
    }
    // Allowed outside, a file that is not PTX is refused without its contents.
    let all = CaseOptions {
        allow_outside: true,
    };
    t.write_case(&secret.display().to_string(), buf);
    let s = err(run_case_with(&t.case(), &small(), &all));
    assert!(s.contains("not a PTX module"), "{s}");
    // And a real module outside runs when allowed.
    t.write_case("../../outside/kernels.ptx", buf);
    assert!(run_case_with(&t.case(), &small(), &all).unwrap().passed());
    // Buffer files are confined too.
    t.write_case(
        "../kernels.ptx",
        r#""out": {"dtype": "u8", "len": 22, "init": "../../outside/secret.txt"}"#,
    );
    let s = err(run_case(&t.case(), &small()));
    assert!(
        s.contains("init") && s.contains("outside the case's folder"),
        "{s}"
    );
}
