//! A checked block with many accesses goes on in continuation cases: no case
//! of the state machine's switch holds more than 32 exits (`break;`, each
//! check's fault and the watchdog), because lavapipe nests the statements
//! after each exit one level deeper and ignores the execution mask past 80
//! levels (the case gpu_false_misaligned: the store after its block's 78th
//! exit faulted on an in-bounds address). The continuations keep the statements in order,
//! the WGSL validates, and the unchecked kernel (no exits) is one case per
//! block as before. The structured form (no switch) has the same limit on its
//! returns plus nesting, past which the kernel keeps the state machine.

mod common;

use common::{param_pointer, plain_options, validate};
use vgpu_ir::cfg::*;
use vgpu_ir::wgsl::cfg::emit_cfg_wgsl;

/// The most exits one case may hold (emit.rs's `MAX_CASE_EXITS`).
const MAX_EXITS: usize = 32;

/// [`plain_options`] with the state machine whatever the kernel's shape.
fn switch_options(checked: bool) -> vgpu_ir::wgsl::cfg::CfgWgslOptions {
    let mut o = plain_options(checked);
    o.structured = false;
    o
}

fn st(inst: Inst, line: u32) -> Stmt {
    Stmt {
        inst,
        guard: None,
        line,
    }
}

/// Block 0 loads a pointer and jumps to block 1, a loop header (the
/// watchdog's exit) with `stores` 4-byte global stores (every third one
/// guarded) and a branch back to itself or on to block 2, which returns.
fn many_stores(stores: u32) -> CfgKernel {
    use Val::Reg as R;
    let mut body = Vec::new();
    for i in 0..stores {
        let mut s = st(
            Inst::Store {
                space: Space::Global,
                size: 4,
                src: vec![R(0)],
                base: R(1),
                off: 4 * i as i64,
            },
            100 + i,
        );
        if i % 3 == 2 {
            s.guard = Some((2, false));
        }
        body.push(s);
    }
    CfgKernel {
        name: "many_stores".into(),
        regs: vec![RegTy::B32, RegTy::B64, RegTy::Pred],
        blocks: vec![
            Block {
                stmts: vec![
                    st(
                        Inst::Special {
                            d: 0,
                            s: Special::Tid(0),
                        },
                        1,
                    ),
                    st(param_pointer(1), 2),
                ],
                term: Term::Jump(1),
            },
            Block {
                stmts: body,
                term: Term::Branch {
                    p: 2,
                    neg: false,
                    then: 1,
                    els: 2,
                },
            },
            Block {
                stmts: vec![],
                term: Term::Return,
            },
        ],
        param_bytes: 8,
        shared_static: 0,
        local_bytes: 0,
        globals: vec![],
    }
}

/// The state machine's cases: (number, body) in the order written.
fn cases(src: &str) -> Vec<(u32, String)> {
    let main = &src[src.find("switch pc {").expect("the state machine")..];
    let mut out: Vec<(u32, String)> = Vec::new();
    for l in main.lines() {
        let t = l.trim();
        if let Some(n) = t.strip_prefix("case ").and_then(|r| r.strip_suffix("u: {")) {
            out.push((n.parse().expect("a case number"), String::new()));
        } else if t.starts_with("default:") {
            break;
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(l);
            body.push('\n');
        }
    }
    out
}

/// The source lines of the checked global accesses in `body`, in order.
fn access_lines(body: &str) -> Vec<u32> {
    body.lines()
        .filter_map(|l| {
            let r = l.split("gaddr(").nth(1)?;
            // gaddr(address, size, align, line, write, &cache, span)
            let line = r.rsplit(", ").nth(3)?;
            line.strip_suffix('u')?.parse().ok()
        })
        .collect()
}

#[test]
fn a_checked_block_of_many_accesses_goes_on_in_continuation_cases() {
    let k = many_stores(200);
    let src = emit_cfg_wgsl(&k, &switch_options(true)).unwrap();
    validate(&src, false);
    let cs = cases(&src);
    // Blocks 0..3, then the continuations of block 1 (numbered from 3).
    let nums: Vec<u32> = cs.iter().map(|(n, _)| *n).collect();
    let conts = nums.len() - 3;
    assert!(conts >= 200 / MAX_EXITS, "{nums:?}");
    let mut want = vec![0, 1];
    want.extend(3..3 + conts as u32);
    want.push(2);
    assert_eq!(nums, want);
    for (n, body) in &cs {
        let exits = body.matches("break;").count();
        assert!(exits <= MAX_EXITS, "case {n} holds {exits} exits:\n{body}");
    }
    // Block 1, then each continuation, hands over to the next one; the last
    // one ends in the block's branch.
    let chain: Vec<&(u32, String)> = cs.iter().filter(|(n, _)| *n == 1 || *n >= 3).collect();
    for w in chain.windows(2) {
        let next = format!("pc = {}u;", w[1].0);
        let body = w[0].1.trim_end().trim_end_matches('}').trim_end();
        assert!(
            body.ends_with(&next),
            "case {} does not go on in case {}:\n{}",
            w[0].0,
            w[1].0,
            w[0].1
        );
    }
    assert!(chain
        .last()
        .unwrap()
        .1
        .contains("pc = select(2u, 1u, r2 != 0u);"));
    // Every store once, in order; the watchdog's check only in block 1's case.
    let lines: Vec<u32> = chain.iter().flat_map(|(_, b)| access_lines(b)).collect();
    assert_eq!(lines, (100..300).collect::<Vec<u32>>());
    let watchdog = |b: &str| b.matches("steps > words[").count();
    assert_eq!(watchdog(&chain[0].1), 1);
    assert!(chain[1..].iter().all(|(_, b)| watchdog(b) == 0));
    // Full cases: a continuation starts where the next statement's exit
    // would pass the limit.
    for (n, body) in &chain[..chain.len() - 1] {
        assert_eq!(
            body.matches("break;").count(),
            MAX_EXITS,
            "case {n} was cut early:\n{body}"
        );
    }
}

#[test]
fn blocks_within_the_limit_and_unchecked_kernels_keep_one_case_per_block() {
    // Unchecked: no exits, one case per block whatever its length.
    let src = emit_cfg_wgsl(&many_stores(200), &switch_options(false)).unwrap();
    validate(&src, false);
    let nums: Vec<u32> = cases(&src).iter().map(|(n, _)| *n).collect();
    assert_eq!(nums, vec![0, 1, 2]);
    // Checked: the watchdog and 31 accesses fill block 1's case exactly.
    let src = emit_cfg_wgsl(&many_stores(MAX_EXITS as u32 - 1), &switch_options(true)).unwrap();
    validate(&src, false);
    let cs = cases(&src);
    assert_eq!(
        cs.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert_eq!(cs[1].1.matches("break;").count(), MAX_EXITS);
    // One more goes on in a continuation holding it alone.
    let src = emit_cfg_wgsl(&many_stores(MAX_EXITS as u32), &switch_options(true)).unwrap();
    validate(&src, false);
    let cs = cases(&src);
    assert_eq!(
        cs.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        vec![0, 1, 3, 2]
    );
    assert_eq!(access_lines(&cs[2].1), vec![100 + MAX_EXITS as u32 - 1]);
}

#[test]
fn the_structured_form_keeps_within_the_nesting_limit() {
    // 40 checked stores: 40 returns, the watchdog's and the loop's nesting
    // are within 64: structured, every store once, in order.
    let src = emit_cfg_wgsl(&many_stores(40), &plain_options(true)).unwrap();
    validate(&src, false);
    assert!(src.contains("fn run_thread(") && !src.contains("switch pc"));
    assert_eq!(access_lines(&src), (100..140).collect::<Vec<u32>>());
    assert!(
        !src.contains("pc = 4294967295u; break;"),
        "exits are returns:\n{src}"
    );
    // One return per store; the parameter load, at a constant offset inside
    // the parameters, has no check to fail (wgsl/cfg/ranges.rs).
    let body = &src[src.find("fn run_thread(").unwrap()..];
    assert_eq!(body.matches("{ return; }").count(), 40, "{body}");
    // 70: past it, the state machine with its continuation cases.
    let src = emit_cfg_wgsl(&many_stores(70), &plain_options(true)).unwrap();
    validate(&src, false);
    assert!(src.contains("switch pc") && !src.contains("fn run_thread("));
    // The structured form tried first gives back its sites' region caches:
    // the state machine's first 16 stores have their own, from gc0.
    for i in 0..16 {
        assert_eq!(src.matches(&format!("&gc{i}, 4u)")).count(), 1, "gc{i}");
    }
    assert!(!src.contains("&gc16,") && src.contains("&gc_w, 16u)"));
    // Unchecked, no exits: structured whatever the length.
    let src = emit_cfg_wgsl(&many_stores(200), &plain_options(false)).unwrap();
    validate(&src, false);
    assert!(src.contains("fn run_thread("));
}
