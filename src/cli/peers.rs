//! `membw peers --backend cuda:all`: GPU↔GPU copies over every ordered
//! pair of a device set (`backend::gpu::peers`), as a matrix per method.
//! Exit 0 when every copy arrived right, 1 when one did not.

use super::common::{print, read_topology, stop_flag};
use crate::backend::gpu::peers::{self, PeerMethod, PeerPlan};
use crate::error::{Error, Result};
use crate::results::peers::{PEERS_KIND, PeerReport};
use clap::Args;

/// Doubles per buffer unless given: nvbandwidth's 512 MiB.
const DEFAULT_ELEMENTS: usize = 1 << 26;

#[derive(Args, Debug)]
pub(crate) struct PeersArgs {
    #[command(flatten)]
    backend: super::flags::BackendArg,

    #[command(flatten)]
    fake: super::flags::FakeSourceArg,

    /// How each pair copies: ce-write, ce-read, sm-write, sm-read, ce-bidir (comma-separated)
    #[arg(long, value_name = "METHOD,...", default_value = "ce-write,ce-read,sm-write,sm-read,ce-bidir", value_parser = parse_methods)]
    methods: Methods,

    /// Elements or bytes per buffer [default: 512 MiB, as nvbandwidth]
    #[command(flatten)]
    size: super::flags::ArraySizeFlag,

    #[command(flatten)]
    ntimes: super::flags::Ntimes,

    #[command(flatten)]
    form: super::flags::Form,
    #[command(flatten)]
    json: super::flags::JsonFlag,
}

#[derive(Debug, Clone)]
struct Methods(Vec<PeerMethod>);

fn parse_methods(text: &str) -> std::result::Result<Methods, String> {
    let mut out = Vec::new();
    for name in text.split(',').map(str::trim) {
        let m = PeerMethod::parse(name).ok_or_else(|| {
            format!("'{name}': a method is ce-write, ce-read, sm-write, sm-read or ce-bidir")
        })?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    Ok(Methods(out))
}

pub(crate) fn peers(args: PeersArgs) -> Result<()> {
    if args.fake.fake_source.is_some() {
        return Err(Error::Usage(
            "--fake-source: peers measures devices; the simulated node is --backend sim:all".into(),
        ));
    }
    let spec = args.backend.spec();
    let usage = |e: String| Error::Usage(format!("--backend {spec}: {e}"));
    let (platform, devices) = crate::backend::platform_set(spec)
        .map_err(usage)?
        .ok_or_else(|| {
            usage("names no GPU platform: peers copies between the devices of a set (--backend cuda:all)".into())
        })?;
    if devices.len() < 2 {
        return Err(usage(format!(
            "one device: peers copies between two or more (write {}:all)",
            platform.name()
        )));
    }
    platform.check_setup().map_err(usage)?;
    let elements = match args.size.size {
        None => DEFAULT_ELEMENTS,
        Some(s) => usize::try_from(s.elements())
            .ok()
            .filter(|&n| n <= 1 << 40)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--array-size: {} doubles per buffer is more than any device holds",
                    s.elements()
                ))
            })?,
    };
    if elements < 1024 {
        return Err(Error::Usage(format!(
            "--array-size: {elements} doubles per buffer; a peer copy needs 1024 or more"
        )));
    }
    let topo = read_topology(None)?;
    let plan = PeerPlan {
        elements,
        ntimes: args.ntimes.ntimes as usize,
    };
    let described = devices
        .iter()
        .map(|&i| platform.describe(i, &topo).map(|d| d.device))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(Error::Runtime)?;
    let stop = stop_flag();
    let times = peers::measure(platform, &topo, &devices, plan, &args.methods.0, &stop)
        .map_err(|e| Error::Runtime(format!("peer copies: {e}")))?;
    if let Some(signal) = stop.signal() {
        return Err(Error::Interrupted {
            signal,
            message: format!(
                "stopped by {}: the matrix is incomplete, nothing printed",
                super::common::signal_name(signal)
            ),
        });
    }
    let mut cells: Vec<_> = times.iter().map(peers::PairTimes::cell).collect();
    crate::results::peers::add_paths(&mut cells, &described);
    // The fabric the devices' facts name, as the platform that names it
    // describes it (a simulated node models NVLink).
    let fabric = (described.iter())
        .find_map(|d| d.facts.fabric.as_ref())
        .and_then(|f| crate::backend::fabric_kind(&f.name));
    let report = PeerReport {
        schema_version: 1,
        kind: PEERS_KIND.into(),
        timestamp: crate::results::now(),
        host: crate::results::Host::describe(&topo),
        devices: described,
        elements: elements as u64,
        ntimes: plan.ntimes,
        cells,
        fabric,
    };
    print(super::common::render_as(
        args.form.format,
        &crate::report::view::View::Peers(&report),
    )?)?;
    match report.wrong().first() {
        Some(w) => Err(Error::Validation(format!(
            "a peer copy came back wrong: {w}"
        ))),
        None => Ok(()),
    }
}
