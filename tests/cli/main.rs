//! The CLI suites, one module a former test file, in one test binary: on a
//! 2-core machine linking 40 binaries (each with the library and every
//! dependency) took longer than running their tests (docs/guide/testing.md).
//! `cargo test --test cli -- run::` runs one suite. Five stay binaries of
//! their own: `trust`, `mpi` and `vm` load the machine on purpose (competing
//! processes, MPI jobs, QEMU guests), which would disturb the suites beside
//! them, and `hostile_files` and `report_memory` measure a child's peak
//! memory, which starts from this process's.

#[path = "../common/mod.rs"]
mod common;

mod cuda;
mod device;
mod device_sets;
mod documents;
mod first_try;
mod foreign;
mod formats;
mod gpu_fleet;
mod gpu_memory;
mod gpu_runtimes;
mod health;
mod health_exits;
mod hip;
mod hip_runtime;
mod hip_smi;
mod inputs;
mod labels;
mod latency;
mod layers;
mod many_writers;
mod memory_errors;
mod nvml;
mod packaging;
mod pages;
mod peers;
mod place_cli;
mod placement;
mod plan;
mod readme;
mod reframe;
mod reproduce;
mod run;
mod shapes;
mod side_by_side;
mod study;
mod superchip;
mod sweep_axes;
mod topo_cli;
mod topology;
mod transfers;
mod unknowns;
