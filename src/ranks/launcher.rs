//! Which launcher started this process as one of several ranks, read from
//! the variables each one sets: Open MPI's mpirun, MPICH's Hydra (and Intel
//! MPI), Slurm's srun.

use crate::error::{Error, Result};

/// This process's place in a multi-process launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankPlace {
    pub rank: usize,
    pub size: usize,
    pub local_rank: Option<usize>,
    /// The ranks on this node, when the launcher says (and, under Slurm,
    /// when every node has as many).
    pub local_size: Option<usize>,
    /// The variable that gave the size away, for messages.
    pub size_variable: &'static str,
}

/// (size, rank, local rank) variables, in the order they are trusted.
/// Slurm's `SLURM_NTASKS` is not among them: a batch script's own shell has
/// it too, where membw runs once; srun sets `SLURM_STEP_NUM_TASKS` for the
/// tasks it starts.
const LAUNCHERS: [(&str, &str, &str, &str); 3] = [
    (
        "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "OMPI_COMM_WORLD_LOCAL_SIZE",
    ),
    ("PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    (
        "SLURM_STEP_NUM_TASKS",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_STEP_TASKS_PER_NODE",
    ),
];

/// Slurm's tasks per node: `4`, `4(x2)`, or `4(x2),3` where the nodes
/// differ: the count where every node has the same, else none.
fn tasks_per_node(text: &str) -> Option<usize> {
    let counts: Vec<usize> = (text.split(','))
        .map(|part| part.split('(').next().unwrap_or("").trim().parse().ok())
        .collect::<Option<_>>()?;
    let first = *counts.first()?;
    counts.iter().all(|&c| c == first).then_some(first)
}

/// The launch this process is part of, if a launcher's variables say so.
/// A variable that is set but not a number is an error naming it.
pub fn detect(get: impl Fn(&str) -> Option<String>) -> Result<Option<RankPlace>> {
    let number = |name: &'static str| -> Result<Option<usize>> {
        match get(name) {
            None => Ok(None),
            Some(v) => v.trim().parse::<usize>().map(Some).map_err(|_| {
                Error::Usage(format!(
                    "{name}='{v}': not a number (set by the launcher that started membw)"
                ))
            }),
        }
    };
    for (size, rank, local, local_size) in LAUNCHERS {
        let Some(n) = number(size)? else { continue };
        let r = number(rank)?.unwrap_or(0);
        if n == 0 || r >= n {
            return Err(Error::Usage(format!(
                "{rank}={r} with {size}={n}: the rank is not below the number of ranks"
            )));
        }
        return Ok(Some(RankPlace {
            rank: r,
            size: n,
            local_rank: number(local)?,
            local_size: get(local_size).and_then(|v| tasks_per_node(&v)),
            size_variable: size,
        }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)]) -> Result<Option<RankPlace>> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        detect(|k| map.get(k).cloned())
    }

    #[test]
    fn each_launcher_is_recognized() {
        let l = with(&[
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!((l.rank, l.size, l.local_rank), (3, 4, Some(1)));
        let l = with(&[("PMI_SIZE", "2"), ("PMI_RANK", "1")])
            .unwrap()
            .unwrap();
        assert_eq!((l.rank, l.size, l.size_variable), (1, 2, "PMI_SIZE"));
        let l = with(&[
            ("SLURM_STEP_NUM_TASKS", "8"),
            ("SLURM_PROCID", "5"),
            ("SLURM_LOCALID", "1"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!((l.rank, l.size, l.local_size), (5, 8, None));
        let l = with(&[
            ("SLURM_STEP_NUM_TASKS", "8"),
            ("SLURM_PROCID", "5"),
            ("SLURM_STEP_TASKS_PER_NODE", "4(x2)"),
        ]);
        assert_eq!(l.unwrap().unwrap().local_size, Some(4));
        assert_eq!(tasks_per_node("4(x2),3"), None);
        assert_eq!(tasks_per_node("2,2"), Some(2));
        let l = with(&[
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ]);
        assert_eq!(l.unwrap().unwrap().local_size, Some(2));
        // A batch script's shell: one process, whatever the job's task count.
        assert_eq!(
            with(&[("SLURM_NTASKS", "8"), ("SLURM_PROCID", "0")]).unwrap(),
            None
        );
        assert_eq!(with(&[]).unwrap(), None);
    }

    #[test]
    fn garbled_variables_are_errors_naming_them() {
        let e = with(&[("OMPI_COMM_WORLD_SIZE", "four")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("OMPI_COMM_WORLD_SIZE") && e.contains("four"),
            "{e}"
        );
        let e = with(&[("PMI_SIZE", "2"), ("PMI_RANK", "2")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("PMI_RANK"), "{e}");
    }
}
