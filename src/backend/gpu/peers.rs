//! GPU↔GPU copies over every ordered pair of a device set (`membw peers`),
//! as nvbandwidth measures them: by the copy engine or by the GPU's own
//! threads (a copy kernel), written by the source or read by the
//! destination, one way or both at once; each timed by the events of the
//! device that queued it, over the runtime layer's peer calls, so every
//! vendor gets it. One host thread drives every device.

use super::runtime::{DevicePtr, Event, Function, KernelArgs, Platform, Runtime, Stream};
use crate::kernels::ArrayId;
use crate::kernels::gpu_builds::DEFAULT_BLOCK;
use crate::results::peers::PeerCell;
pub use crate::results::peers::PeerMethod;
use crate::topology::Topology;

/// One ordered pair and method: what its repetitions took.
#[derive(Debug, Clone, PartialEq)]
pub struct PairTimes {
    pub from: u32,
    pub to: u32,
    pub method: PeerMethod,
    /// Whether the queuing device reaches the other directly.
    pub direct: bool,
    /// Bytes one repetition moves (both ways' for [`PeerMethod::CeBidir`]).
    pub bytes: u64,
    /// Each repetition's seconds by the queuing device's clock; empty
    /// where it was not measured (`skipped` says why).
    pub times_s: Vec<f64>,
    /// Why a copy came back wrong (the element and what it held).
    pub wrong: Option<String>,
    pub skipped: Option<String>,
}

impl PairTimes {
    /// The cell a document keeps: rates over the repetitions.
    pub fn cell(&self) -> PeerCell {
        let rates: Vec<f64> = (self.times_s.iter())
            .filter(|&&s| s > 0.0)
            .map(|s| self.bytes as f64 / s * 1e-9)
            .collect();
        PeerCell {
            from: self.from,
            to: self.to,
            method: self.method.name().into(),
            path: if self.direct { "direct" } else { "staged" }.into(),
            bytes: self.bytes,
            best_gb_s: rates.iter().copied().reduce(f64::max),
            rates: crate::results::Stats::of(&rates),
            wrong: self.wrong.clone(),
            skipped: self.skipped.clone(),
            fabric: None,
        }
    }
}

/// One device of the probe: its runtime, a source and a destination
/// buffer, and its copy kernel.
struct PeerMember {
    index: u32,
    rt: Box<dyn Runtime>,
    src: DevicePtr,
    dst: DevicePtr,
    copy: Function,
    fill: Function,
    grid: u32,
}

/// What the probe copies: elements per buffer and timed repetitions.
#[derive(Debug, Clone, Copy)]
pub struct PeerPlan {
    pub elements: usize,
    pub ntimes: usize,
}

/// Every ordered pair of `devices`, by every method of `methods`, in
/// that order (method, then source, then destination).
pub fn measure(
    platform: &dyn Platform,
    topo: &Topology,
    devices: &[u32],
    plan: PeerPlan,
    methods: &[PeerMethod],
    stop: &crate::sys::Stop,
) -> Result<Vec<PairTimes>, String> {
    let mut members = devices
        .iter()
        .map(|&i| open(platform, topo, i, plan.elements))
        .collect::<Result<Vec<_>, _>>()?;
    // Who reaches whom directly, asked once every buffer exists.
    let n = members.len();
    let mut direct = vec![vec![false; n]; n];
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            let memory = [
                (members[b].src, plan.elements),
                (members[b].dst, plan.elements),
            ];
            let peer = members[b].index;
            members[a].rt.make_current()?;
            direct[a][b] = members[a].rt.enable_peer(peer, &memory)?;
        }
    }
    let mut out = Vec::new();
    for &method in methods {
        for a in 0..n {
            for b in (0..n).filter(|&b| b != a) {
                if stop.requested() {
                    return Ok(out);
                }
                let queuer = if method.by_destination() { b } else { a };
                let other = if queuer == a { b } else { a };
                let reach = direct[queuer][other];
                let mut cell = PairTimes {
                    from: members[a].index,
                    to: members[b].index,
                    method,
                    direct: reach,
                    bytes: (plan.elements * 8) as u64 * if method.both_ways() { 2 } else { 1 },
                    times_s: Vec::new(),
                    wrong: None,
                    skipped: None,
                };
                if method.needs_direct() && !reach {
                    cell.skipped = Some(format!(
                        "{}{} cannot address {}{}'s memory (no peer access)",
                        platform.name(),
                        members[queuer].index,
                        platform.name(),
                        members[other].index
                    ));
                } else {
                    cell_times(&mut members, (a, b), method, plan, &mut cell)?;
                }
                out.push(cell);
            }
        }
    }
    Ok(out)
}

/// Device `index` opened with its two buffers of `elements` doubles.
fn open(
    platform: &dyn Platform,
    topo: &Topology,
    index: u32,
    elements: usize,
) -> Result<PeerMember, String> {
    let facts = platform.describe(index, topo)?.device.facts;
    let bytes = elements * 8;
    if let Some(memory) = facts
        .memory_bytes
        .filter(|&m| (2 * bytes) as f64 > 0.5 * m as f64)
    {
        return Err(format!(
            "two buffers of {} are more than half of {}{}'s {}",
            crate::units::Bytes(bytes as u64),
            platform.name(),
            index,
            crate::units::Bytes(memory)
        ));
    }
    let mut rt = platform.open(index)?;
    rt.make_current()?;
    let (src, dst) = (rt.alloc(bytes)?, rt.alloc(bytes)?);
    let copy = rt.function("copy")?;
    let fill = rt.function("fill_a")?;
    let grid = rt.blocks_per_multiprocessor(copy, DEFAULT_BLOCK)?
        * facts.multiprocessors.unwrap_or(1).max(1);
    Ok(PeerMember {
        index,
        rt,
        src,
        dst,
        copy,
        fill,
        grid,
    })
}

/// Sets `elements` doubles at `at` (device `m`'s, or a peer's it reaches)
/// to `value`, and waits for it.
fn fill(m: &mut PeerMember, at: DevicePtr, value: f64, elements: usize) -> Result<(), String> {
    let mut arrays = [0; crate::kernels::ARRAYS];
    arrays[ArrayId::A.index()] = at;
    let args = KernelArgs {
        arrays,
        partial: 0,
        scalar: value,
        elements: elements as u64,
    };
    m.rt.make_current()?;
    m.rt.launch(m.fill, m.grid, DEFAULT_BLOCK, &args, Stream::Main)?;
    m.rt.synchronize(Stream::Main)
}

/// The value device `i`'s source buffer holds: which source a copy came
/// from shows in what arrived.
fn mark(index: u32) -> f64 {
    f64::from(index) + 1.0
}

/// Times one cell: a warm-up, then `ntimes` repetitions between two events
/// of the queuing device; then checks what arrived.
fn cell_times(
    members: &mut [PeerMember],
    (a, b): (usize, usize),
    method: PeerMethod,
    plan: PeerPlan,
    cell: &mut PairTimes,
) -> Result<(), String> {
    let n = plan.elements;
    for (m, value) in [(a, members[a].index), (b, members[b].index)] {
        let (src, dst) = (members[m].src, members[m].dst);
        fill(&mut members[m], src, mark(value), n)?;
        fill(&mut members[m], dst, 0.0, n)?;
    }
    let (src_a, dst_a, src_b, dst_b) = (
        members[a].src, members[a].dst, members[b].src, members[b].dst,
    );
    let queuer = if method.by_destination() { b } else { a };
    let q = &mut members[queuer];
    q.rt.make_current()?;
    let queue = |q: &mut PeerMember| -> Result<(), String> {
        match method {
            PeerMethod::CeWrite | PeerMethod::CeRead | PeerMethod::CeBidir => {
                // SAFETY: both buffers are allocations of the pair's, alive
                // while the probe lives, and the peer was enabled (or
                // staged) for them.
                unsafe { q.rt.copy_device(dst_b, src_a, n, Stream::Main) }?;
                if method.both_ways() {
                    q.rt.wait(Stream::Other, Event::Start)?;
                    // SAFETY: as above, the other way.
                    unsafe { q.rt.copy_device(dst_a, src_b, n, Stream::Other) }?;
                    q.rt.record(Event::OtherDone, Stream::Other)?;
                    q.rt.wait(Stream::Main, Event::OtherDone)?;
                }
                Ok(())
            }
            PeerMethod::SmWrite | PeerMethod::SmRead => {
                let mut arrays = [0; crate::kernels::ARRAYS];
                arrays[ArrayId::A.index()] = src_a;
                arrays[ArrayId::C.index()] = dst_b;
                let args = KernelArgs {
                    arrays,
                    partial: 0,
                    scalar: 0.0,
                    elements: n as u64,
                };
                q.rt.launch(q.copy, q.grid, DEFAULT_BLOCK, &args, Stream::Main)
            }
        }
    };
    // Warm-up: the first copy pays for mappings and the link's wake-up.
    q.rt.record(Event::Start, Stream::Main)?;
    queue(q)?;
    q.rt.synchronize(Stream::Main)?;
    q.rt.synchronize(Stream::Other)?;
    for _ in 0..plan.ntimes {
        q.rt.record(Event::Start, Stream::Main)?;
        queue(q)?;
        q.rt.record(Event::End, Stream::Main)?;
        q.rt.synchronize(Stream::Main)?;
        cell.times_s.push(q.rt.elapsed_s(Event::Start, Event::End)?);
    }
    q.rt.synchronize(Stream::Other)?;
    let mut arrived = vec![(dst_b, members[a].index, b)];
    if method.both_ways() {
        arrived.push((dst_a, members[b].index, a));
    }
    for (dst, from, holder) in arrived {
        if let Some(w) = check_arrived(&mut members[holder], dst, mark(from), n)? {
            cell.wrong = Some(w);
        }
    }
    Ok(())
}

/// Reads back the first and last elements of a destination (up to 4096
/// of each): every one must be `want`.
fn check_arrived(
    m: &mut PeerMember,
    dst: DevicePtr,
    want: f64,
    n: usize,
) -> Result<Option<String>, String> {
    let k = n.min(4096);
    let mut head = vec![0.0; k];
    let mut tail = vec![0.0; k];
    m.rt.make_current()?;
    m.rt.read(dst, &mut head)?;
    m.rt.read(dst + ((n - k) * 8) as u64, &mut tail)?;
    let wrong = (head.iter().enumerate().map(|(i, &v)| (i, v)))
        .chain(tail.iter().enumerate().map(|(i, &v)| (n - k + i, v)))
        .find(|&(_, v)| v != want);
    Ok(wrong.map(|(i, v)| format!("element {i} held {v}, not {want}")))
}
