//! What an adaptive ensemble returns: per-trajectory [`Status`] and
//! [`TrajectoryStats`], and the whole [`EnsembleSolution`].

use std::fmt;

/// How a trajectory's integration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Status {
    /// Reached the end of its span.
    #[default]
    Success = 0,
    /// Used `maxiters` step attempts (accepted plus rejected) before the end.
    MaxIters = 1,
    /// The step size fell below `dtmin`, or below the resolution of `t`
    /// (`t + dt == t`): typically a singularity or extreme stiffness.
    DtMin = 2,
    /// A NaN or infinity appeared in an accepted state or in the field's value
    /// there (no step size can recover from that).
    NonFinite = 3,
    /// Stopped by a terminating event (its [`TrajectoryStats::t`] is the
    /// event's time, its final state the state there).
    Terminated = 4,
}

impl Status {
    /// Whether the trajectory reached the end of its span.
    pub fn is_success(self) -> bool {
        self == Status::Success
    }
    /// The status as its stable integer code (`Success = 0`, `MaxIters = 1`,
    /// `DtMin = 2`, `NonFinite = 3`, `Terminated = 4`), for arrays handed to
    /// other languages.
    pub fn code(self) -> u8 {
        self as u8
    }
    /// The status's name, as in the enum.
    pub fn name(self) -> &'static str {
        match self {
            Status::Success => "Success",
            Status::MaxIters => "MaxIters",
            Status::DtMin => "DtMin",
            Status::NonFinite => "NonFinite",
            Status::Terminated => "Terminated",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What happened to one trajectory.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TrajectoryStats {
    /// How it ended.
    pub status: Status,
    /// Accepted steps.
    pub accepted: u64,
    /// Rejected step attempts.
    pub rejected: u64,
    /// Evaluations of the right-hand side (stages, the starting-step estimate,
    /// dense-output stages).
    pub evaluations: u64,
    /// The time the trajectory reached (its `t1` on success), as `f64`.
    pub t: f64,
}

/// The result of an adaptive ensemble of `n` trajectories of `dim` components
/// with `k` save times.
#[derive(Debug, Clone, PartialEq)]
pub struct EnsembleSolution<T> {
    /// Trajectories (N).
    pub n: usize,
    /// Components per state (D).
    pub dim: usize,
    /// Save times (K), shared by all trajectories.
    pub saveat: Vec<f64>,
    /// Final states, trajectory-major `(N, D)`: `end[i·D + d]`. For a failed
    /// trajectory, its last accepted state (at [`TrajectoryStats::t`]).
    pub end: Vec<T>,
    /// States at the save times, `(N, K, D)`: `saved[(i·K + j)·D + d]`, filled
    /// from each method's dense output. Save times a failed trajectory did not
    /// reach hold NaN.
    pub saved: Vec<T>,
    /// Per trajectory: status, step counts, evaluations, time reached.
    pub stats: Vec<TrajectoryStats>,
}

impl<T: Copy> EnsembleSolution<T> {
    /// The final state of trajectory `i`.
    pub fn end_of(&self, i: usize) -> &[T] {
        &self.end[i * self.dim..][..self.dim]
    }
    /// The state of trajectory `i` at save time `j`.
    pub fn saved_at(&self, i: usize, j: usize) -> &[T] {
        let k = self.saveat.len();
        &self.saved[(i * k + j) * self.dim..][..self.dim]
    }
    /// Per-trajectory statuses, in trajectory order.
    pub fn statuses(&self) -> Vec<Status> {
        self.stats.iter().map(|s| s.status).collect()
    }
    /// Whether every trajectory succeeded.
    pub fn all_success(&self) -> bool {
        self.stats.iter().all(|s| s.status.is_success())
    }
}
