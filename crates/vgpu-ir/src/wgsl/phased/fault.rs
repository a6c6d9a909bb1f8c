//! A phased kernel's GPU fault record as the error it stands for.

use crate::args::Args;
use crate::error::IrError;
use crate::eval;
use crate::kernel::{Kernel, Node};
use crate::types::ScalarType;

/// The error a GPU fault record (`[trajectory, site, index, _]`, trajectory
/// `u32::MAX` when none) stands for: the buffer, shared sub-field or flux
/// output the faulting access reads or writes, its length, the index (signed
/// where the index is `i32`), the trajectory and its place in the source.
/// `None` when the record holds no fault.
pub fn fault_error(
    k: &Kernel,
    args: &Args,
    shared_lens: &[u32],
    flux_lens: &[u32],
    bdim: u32,
    fault: &[u32; 4],
) -> Option<IrError> {
    if fault[0] == u32::MAX {
        return None;
    }
    let site = fault[1];
    let from_nodes = k.nodes.iter().find_map(|nd| match *nd {
        Node::Load {
            buf,
            index,
            site: s,
        } if s == site => Some((
            k.params[buf as usize].name.clone(),
            args.buffer_at(buf as usize).map(|b| b.len()).unwrap_or(0),
            index,
        )),
        Node::SharedLoad {
            shared,
            index,
            site: s,
        } if s == site => Some((
            k.shared[shared as usize].name.clone(),
            shared_lens.get(shared as usize).copied().unwrap_or(0) as usize,
            index,
        )),
        _ => None,
    });
    let from_phases = || {
        k.phases.iter().find_map(|p| {
            p.drives
                .iter()
                .find(|d| d.site == site)
                .map(|d| {
                    (
                        k.shared[d.shared as usize].name.clone(),
                        shared_lens.get(d.shared as usize).copied().unwrap_or(0) as usize,
                        d.index,
                    )
                })
                .or_else(|| {
                    p.emits.iter().find(|e| e.site == site).map(|e| {
                        (
                            k.fluxes[e.flux as usize].name.clone(),
                            flux_lens.get(e.flux as usize).copied().unwrap_or(0) as usize,
                            e.index,
                        )
                    })
                })
        })
    };
    let (name, len, index) = match from_nodes.or_else(from_phases) {
        Some((name, len, index)) => {
            let i = if k.ty(index) == ScalarType::I32 {
                fault[2] as i32 as i64
            } else {
                fault[2] as i64
            };
            (name, len, i)
        }
        None => ("?".to_string(), 0, fault[2] as i64),
    };
    let pos = k.sites.get(site as usize).copied().unwrap_or_default();
    Some(eval::oob(
        k,
        &name,
        len,
        index,
        fault[0] as usize,
        bdim,
        pos,
    ))
}
