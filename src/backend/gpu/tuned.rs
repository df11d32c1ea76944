//! The launch shape each GPU architecture measured fastest, kernel by
//! kernel: what a run times where the user named none. `membw tune
//! --backend DEVICE` measured each row on the GPU it names
//! (docs/guide/gpu.md, "ShapeRate", gives the date, driver and command);
//! an architecture not listed falls back to timing the builds of
//! [`FALLBACK_BUILDS`](crate::kernels::gpu_builds::FALLBACK_BUILDS) in
//! each grid and keeping the fastest.

use crate::kernels::KernelId;
use crate::kernels::gpu_builds::ShapeId;

/// One measured row: the architecture, the GPU it was measured on, and
/// each kernel's shape id (kernels not listed take `others`).
struct ShapeRate {
    architecture: &'static str,
    gpu: &'static str,
    kernels: &'static [(KernelId, &'static str)],
    others: &'static str,
}

/// None yet: the shapes of kernels.cu beyond its first four builds are
/// unmeasured on any GPU (issue 66), so every architecture falls back to
/// timing those four, as before they existed.
const MEASURED: &[ShapeRate] = &[];

/// The measured default of `kernel` on `architecture`, and the GPU it was
/// measured on.
pub(super) fn measured_default(
    architecture: &str,
    kernel: KernelId,
) -> Option<(ShapeId, &'static str)> {
    lookup(MEASURED, architecture, kernel)
}

fn lookup(
    table: &[ShapeRate],
    architecture: &str,
    kernel: KernelId,
) -> Option<(ShapeId, &'static str)> {
    let row = table.iter().find(|m| m.architecture == architecture)?;
    let id = (row.kernels.iter().find(|(k, _)| *k == kernel)).map_or(row.others, |(_, id)| *id);
    Some((id.parse().ok()?, row.gpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_measured_shape_id_names_a_shape() {
        for row in MEASURED {
            assert!(row.others.parse::<ShapeId>().is_ok(), "{}", row.others);
            for (kernel, id) in row.kernels {
                assert!(id.parse::<ShapeId>().is_ok(), "{kernel}: {id}");
            }
        }
        assert!(measured_default("sm_10", KernelId::Triad).is_none());
    }

    #[test]
    fn a_kernel_takes_its_own_row_else_the_architectures_other_shape() {
        let table = [ShapeRate {
            architecture: "sm_90",
            gpu: "NVIDIA H200",
            kernels: &[(KernelId::Dot, "w16.spread.b256.cover")],
            others: "w16.u1.b256.cover",
        }];
        let (dot, gpu) = lookup(&table, "sm_90", KernelId::Dot).unwrap();
        assert_eq!(
            (dot.to_string().as_str(), gpu),
            ("w16.spread.b256.cover", "NVIDIA H200")
        );
        let (triad, _) = lookup(&table, "sm_90", KernelId::Triad).unwrap();
        assert_eq!(triad.to_string(), "w16.u1.b256.cover");
        assert!(lookup(&table, "sm_80", KernelId::Triad).is_none());
    }
}
