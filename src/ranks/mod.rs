//! Measurements across processes: how a rank finds out it is one of several
//! ([`launcher`]) and the MPI transport that makes the ranks measure in step
//! ([`mpi`], behind the `mpi` feature). What the ranks measured, and what is
//! computed from it (aggregate, per-node table, slow nodes), is plain data
//! in [`crate::results::ranks`], so the results model needs nothing from here.

pub mod launcher;
#[cfg(feature = "mpi")]
pub mod mpi;

pub use crate::results::ranks::{DEFAULT_OUTLIER, NodeRow, RankRun, Ranks, node_table, overlaps};
