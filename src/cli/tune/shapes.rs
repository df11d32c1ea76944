//! `membw tune --backend DEVICE`: a GPU's launch shapes searched, every
//! build in every block size and grid for each kernel, each checked on its
//! own, the fastest kept where it beats the default beyond the noise.

use super::TuneArgs;
use crate::cli::common::{print, stop_flag};
use crate::engine::{Engine, Source};
use crate::error::{Error, Result};
use crate::kernels::KernelId;
use crate::kernels::gpu_builds::ShapeChoice;
use crate::plan::{Prepared, Settings};
use crate::report::shapes::{self, ShapeSearch};
use crate::report::view::Format;
use crate::topology::Topology;

/// BabelStream's five kernels: what a shape search times where no
/// `--kernel` is given.
const BABELSTREAM_KERNELS: [KernelId; 5] = [
    KernelId::Copy,
    KernelId::Scale,
    KernelId::Add,
    KernelId::Triad,
    KernelId::Dot,
];

pub(super) fn tune_shapes(
    args: &TuneArgs,
    topo: &Topology,
    mut source: Box<dyn Source>,
) -> Result<()> {
    let m = &args.measure;
    if m.shape.is_some() {
        return Err(Error::Usage(
            "--shape names one launch shape, and membw tune searches every shape: run it with membw run --shape".into(),
        ));
    }
    if args.output.output.is_some() || args.dry_run.dry_run {
        return Err(Error::Usage(
            "membw tune --backend DEVICE prints its shapes (--format jsonl for a document) and keeps no results file or plan: run the chosen shape with membw run -o".into(),
        ));
    }
    if !matches!(
        args.form.format,
        Format::Text | Format::Json | Format::Jsonl
    ) {
        return Err(Error::Usage(format!(
            "membw tune --backend DEVICE writes text or jsonl, not {}",
            args.form.format
        )));
    }
    let kernels = args
        .kernel
        .kernel
        .map_or_else(|| BABELSTREAM_KERNELS.to_vec(), |k| vec![k]);
    let mut measure = m.measure(kernels);
    measure.shapes = ShapeChoice::Every;
    let (_, mem) = crate::memory::written::parse_written(&m.one_mem("tune")?, topo)?;
    let request = crate::placement::Request {
        spec: crate::placement::Spec::Default,
        threads: None,
        smt: false,
        cpu_nodes: None,
    };
    let settings = Settings::new(&measure, request, crate::plan::StoresRequest::Auto, mem);
    let mut engine = Engine::new(topo, source.as_mut(), None);
    let Prepared { plan, .. } = engine.prepare(&settings)?;
    let measurement = engine.measure(&plan, crate::engine::By::Engine, &stop_flag())?;
    for w in &measurement.warnings {
        crate::say!("membw: warning: {w}");
    }
    let search = ShapeSearch::from_run(
        plan.target.label(),
        m.backend_name().to_string(),
        plan.target.memory_peak(None).map(|p| p.per_socket_gb_s),
        &measurement,
    );
    match args.form.format {
        // One document on one line: the search, every shape of every kernel.
        Format::Json | Format::Jsonl => print(
            serde_json::to_string(&search).map_err(|e| Error::Runtime(e.to_string()))? + "\n",
        )?,
        _ => print(shapes::render(&search))?,
    }
    if !measurement.validation.passed {
        return Err(Error::Validation(
            "the run with the chosen shapes did not validate".into(),
        ));
    }
    Ok(())
}
