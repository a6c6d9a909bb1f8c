//! [`PhasedLayout`]: a phased launch resolved against its arguments.

use super::{check_phased_wgsl, launch_err};
use crate::args::Args;
use crate::error::IrError;
use crate::eval::{self, Dims};
use crate::kernel::{Kernel, NodeId};
use crate::limits::Limits;
use crate::phased::{check_unit_time, steps_of};
use crate::run::Integration;
use crate::wgsl::{meta_words, FIRST_BUFFER_BINDING};

/// A phased launch resolved against its arguments: block geometry, the lengths
/// of shared sub-fields and flux outputs, and every phase repetition's steps.
#[derive(Clone, Debug, PartialEq)]
pub struct PhasedLayout {
    /// Trajectories per block: the workgroup size.
    pub block: u32,
    /// Blocks: the number of workgroups.
    pub blocks: u32,
    /// The step.
    pub dt: f64,
    /// Elements of each shared sub-field, in declaration order.
    pub shared_lens: Vec<u32>,
    /// Elements of each flux output, in declaration order.
    pub flux_lens: Vec<u32>,
    /// Per phase, the steps of each of its repetitions.
    pub schedule: Vec<Vec<u32>>,
    /// Steps over all phases and repetitions.
    pub steps: usize,
}

impl PhasedLayout {
    /// Resolves `k`'s phased launch `integ` against `args`, with the checks the
    /// CPU executor makes: whole blocks, spans that are whole numbers of steps,
    /// `dt = 1` for phases with jumps or integer drives and emits.
    ///
    /// # Errors
    /// [`IrError::Unsupported`] (see [`check_phased_wgsl`]), missing arguments,
    /// a bad launch ([`IrError::Launch`]), out-of-range reads in lengths, spans
    /// or repetition counts.
    pub fn new(k: &Kernel, args: &Args, integ: &Integration) -> Result<PhasedLayout, IrError> {
        PhasedLayout::new_with(k, args, integ, &Limits::default())
    }

    /// [`PhasedLayout::new`] with the sizes taken from the input held against
    /// `limits` instead of [`Limits::default`].
    ///
    /// # Errors
    /// Those of [`PhasedLayout::new`]; [`IrError::Limit`] for a shared, flux or
    /// repetition size over `limits`; [`IrError::Malformed`] (see [`Kernel::validate`]).
    pub fn new_with(
        k: &Kernel,
        args: &Args,
        integ: &Integration,
        limits: &Limits,
    ) -> Result<PhasedLayout, IrError> {
        k.validate()?;
        check_phased_wgsl(k)?;
        args.check_complete()?;
        let n = integ.n;
        let block = integ.block;
        if n == 0 || n > u32::MAX as usize {
            return Err(launch_err(k, format!("n = {n} is out of range 1..2^32")));
        }
        if block == 0 || n % block as usize != 0 {
            return Err(launch_err(k, format!(
                "a field with phases runs whole blocks: n = {n} is not a multiple of the block size {block}"
            )));
        }
        let blocks = (n / block as usize) as u32;
        let dt = integ.dt;
        let var = k.variance();
        let base = Dims {
            bdim: block,
            gdim: blocks,
            n: n as u32,
            rep: 0,
        };
        let mut roots: Vec<NodeId> = k.shared.iter().map(|s| s.len).collect();
        roots.extend(k.fluxes.iter().map(|f| f.len));
        roots.extend(k.phases.iter().filter_map(|p| p.repeat));
        let uni = eval::uniform_values(k, &k.reachable(&roots), &var, args, base)?;
        let sizes = limits.sizes(k, &uni)?;
        let mut schedule = Vec::with_capacity(k.phases.len());
        let mut steps = 0usize;
        for (pi, (p, &reps)) in k.phases.iter().zip(&sizes.repeats).enumerate() {
            let span = p.span.expect("a phased field's phases have spans");
            check_unit_time(k, p, dt)?;
            let reach = k.reachable(&[span]);
            let mut rep_steps = Vec::with_capacity(reps as usize);
            for rep in 0..reps {
                let uni = eval::uniform_values(k, &reach, &var, args, Dims { rep, ..base })?;
                let span_v = uni[span.index()].map(|v| v.as_f64()).unwrap_or(f64::NAN);
                let what = format!("the span of phase `{}`", p.name);
                let s = steps_of(&k.name, span_v, dt, &what)?;
                limits.check_steps(k, pi, steps as u128 + s as u128)?;
                let s32 = u32::try_from(s).map_err(|_| {
                    launch_err(
                        k,
                        format!(
                            "phase `{}` takes {s} steps: more than 2^32 - 1 on the GPU",
                            p.name
                        ),
                    )
                })?;
                steps = steps.saturating_add(s);
                rep_steps.push(s32);
            }
            schedule.push(rep_steps);
        }
        Ok(PhasedLayout {
            block,
            blocks,
            dt,
            shared_lens: sizes.shared,
            flux_lens: sizes.flux,
            schedule,
            steps,
        })
    }

    /// The binding of flux output `f` (after the buffer parameters).
    pub fn flux_binding(k: &Kernel, f: usize) -> u32 {
        FIRST_BUFFER_BINDING + k.params.iter().filter(|p| p.buffer).count() as u32 + f as u32
    }

    /// The launch words of binding 1 (see the module docs).
    ///
    /// # Errors
    /// Missing arguments; an `f64` scalar.
    pub fn launch_words(&self, k: &Kernel, args: &Args) -> Result<Vec<u32>, IrError> {
        let n = self.block * self.blocks;
        let mut w = meta_words(
            k,
            args,
            n,
            self.steps.min(u32::MAX as usize) as u32,
            0.0,
            self.dt,
        )?;
        w.extend(&self.flux_lens);
        for reps in &self.schedule {
            w.push(reps.len() as u32);
            w.extend(reps);
        }
        Ok(w)
    }
}
