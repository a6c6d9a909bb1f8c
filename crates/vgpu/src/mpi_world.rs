//! The MPI world of `mpirun -n R vgpu …` (the `mpi` feature, rsmpi on
//! OpenMPI): detected from the launcher's environment, initialised only then,
//! so a plain run (or a world of one rank) behaves exactly as without MPI.
//! The few collectives the sharded ensemble needs, on plain integers.

use mpi::environment::Universe;
use mpi::traits::*;

/// Environment variables an MPI launcher sets for its ranks (OpenMPI, PMI,
/// PMIx): present when the process runs under `mpirun`/`srun`.
const LAUNCHER_VARS: [&str; 4] = [
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "PMIX_RANK",
    "MPI_LOCALNRANKS",
];

/// An initialised MPI world of more than one rank.
pub struct World {
    universe: Universe,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "World(rank {} of {})", self.rank(), self.size())
    }
}

impl World {
    /// The world when this process runs under an MPI launcher with more than
    /// one rank; `None` otherwise (MPI is then not initialised, or finalised
    /// at once for a world of one).
    pub fn detect() -> Option<World> {
        if !LAUNCHER_VARS.iter().any(|v| std::env::var_os(v).is_some()) {
            return None;
        }
        let universe = mpi::initialize()?;
        let w = World { universe };
        (w.size() > 1).then_some(w)
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.universe.world().rank() as usize
    }

    /// Ranks in all.
    pub fn size(&self) -> usize {
        self.universe.world().size() as usize
    }

    /// The world's communicator (for [`crate::mpi_io`]'s collective calls).
    pub(crate) fn communicator(&self) -> mpi::topology::SimpleCommunicator {
        self.universe.world()
    }

    /// Rank within this node (the ranks sharing memory with this one): the
    /// GPU adapter index a rank takes when a node has several.
    pub fn node_rank(&self) -> usize {
        let world = self.universe.world();
        world.split_shared(world.rank()).rank() as usize
    }

    /// Every rank's `x`, in rank order, on every rank.
    pub fn all_gather(&self, x: u64) -> Vec<u64> {
        let mut out = vec![0u64; self.size()];
        self.universe.world().all_gather_into(&x, &mut out[..]);
        out
    }

    /// Every rank's `x` (an `f64`), in rank order, on every rank.
    pub fn all_gather_f64(&self, x: f64) -> Vec<f64> {
        self.all_gather(x.to_bits())
            .into_iter()
            .map(f64::from_bits)
            .collect()
    }

    /// Every rank's flag, in rank order, on every rank (a barrier too).
    pub fn all_ok(&self, ok: bool) -> Vec<bool> {
        self.all_gather(ok as u64)
            .into_iter()
            .map(|x| x != 0)
            .collect()
    }
}

impl World {
    /// Stops every rank of the job with exit status `code` (`MPI_Abort`).
    pub fn abort(&self, code: i32) -> ! {
        self.universe.world().abort(code)
    }
}
