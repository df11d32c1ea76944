//! membw's own backend: a team of threads, each pinned to its CPU, each
//! owning one page-aligned chunk of every array (placed by the memory
//! policy, first-touched by that thread), running the SIMD kernels the plan
//! selected.
//!
//! The protocol's repetitions run on the team's leader (member 0, pinned like
//! the others), as an OpenMP master thread runs a parallel region: each
//! call posts a command, releases the team at a barrier, does the leader's
//! own chunk, and returns after the barrier where the last member arrives.
//! Nothing in a timed call allocates, locks or logs.

use super::{ArrayErrors, Backend, Observed, ReadBack, Sums, TargetArrays, WithArrays};
use crate::error::{Error, Result};
use crate::kernels::{ARRAYS, KERNELS, KernelFns, KernelId, StoreMode};
use crate::memory::{self, Arrays, Chunk};
use crate::plan::Plan;
use crate::results::measurement::ThreadPlacement;
use crate::team::{self, Member, Padded};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The pinned SIMD team.
pub struct CpuTeam;

impl Backend for CpuTeam {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn open(&mut self, plan: &Plan, work: &mut dyn WithArrays) -> Result<Observed> {
        let (isa, lead) = plan.cpu_code();
        let fns = Tables::select(isa, lead)?;
        // Each kernel's stores as planned; those near the cache edge the
        // protocol switches while it times both (`use_stores`).
        let mut stores = [lead; KERNELS.len()];
        for (k, &kernel) in plan.kernels.iter().enumerate() {
            stores[kernel as usize] = plan.kernel_stores(k).map_or(lead, |s| s.mode);
        }
        let ranges = memory::partition_for(plan.elements, plan.cpus.len(), plan.hugepages);
        let mut arrays = Arrays::map(
            &plan.arrays_needed(),
            plan.elements,
            plan.offset,
            plan.hugepages,
            &plan.mem,
            &ranges,
        )?;
        if plan.hugepages.transparent() {
            arrays.split_hugepages_at(&ranges, &plan.mem)?;
        }
        let orders = Orders::new(plan.cpus.len());
        let work = Mutex::new(Some(work));
        let outcome = team::run(
            &plan.cpus,
            plan.pinned,
            arrays.chunks(&ranges),
            |m, chunk| {
                let mut part = TeamPart {
                    fns: &fns,
                    chunk,
                    sums: Sums::default(),
                };
                if !m.is_leader() {
                    follow(m, &orders, &mut part);
                    return Ok(());
                }
                let taken = work.lock().ok().and_then(|mut w| w.take());
                let mut leader = Leader {
                    member: m,
                    orders: &orders,
                    part,
                    stores,
                };
                match taken {
                    Some(work) => work.run_on(&mut leader),
                    None => Err(Error::Runtime("the protocol ran twice".into())),
                }
            },
        )?;
        let observed: Vec<Option<usize>> = outcome.iter().map(|o| o.observed_cpu).collect();
        let masks: Vec<Option<String>> = (outcome.iter())
            .map(|o| {
                o.affinity
                    .as_deref()
                    .map(crate::topology::cpulist::format_ranges)
            })
            .collect();
        if let Some(leader) = outcome.into_iter().next() {
            leader.value?;
        }
        let (pages, warnings) = arrays.page_placement(&plan.mem, &ranges, &plan.cpu_nodes);
        let mut threads = ThreadPlacement::list(&plan.cpus, |t| observed.get(t).copied().flatten());
        for (t, mask) in threads.iter_mut().zip(masks) {
            t.affinity = mask;
        }
        Ok(Observed {
            gpu_memory: None,
            threads,
            pages,
            warnings,
        })
    }
}

/// The kernels' implementations for the plan's ISA, one table per store
/// mode: selected once, before the team starts.
struct Tables {
    regular: KernelFns,
    nt: KernelFns,
    /// The plan's own mode: first touch writes with it.
    lead: StoreMode,
}

impl Tables {
    /// Both tables; an ISA without streaming stores (whose plans never ask
    /// for them) runs its regular one for both.
    fn select(isa: crate::kernels::Isa, lead: StoreMode) -> Result<Tables> {
        let regular = KernelFns::select(isa, StoreMode::Regular)?;
        let nt = match isa.has_streaming_stores() {
            true => KernelFns::select(isa, StoreMode::Nt)?,
            false => regular,
        };
        KernelFns::select(isa, lead)?;
        Ok(Tables { regular, nt, lead })
    }

    fn of(&self, stores: StoreMode) -> &KernelFns {
        match stores {
            StoreMode::Regular => &self.regular,
            StoreMode::Nt => &self.nt,
        }
    }
}

/// One member's chunk and what it needs to run kernels over it.
struct TeamPart<'a, 'c> {
    fns: &'a Tables,
    chunk: Chunk<'c>,
    sums: Sums,
}

impl TeamPart<'_, '_> {
    fn obey(&mut self, order: Order, orders: &Orders, index: usize) {
        match order {
            Order::Init(values) => {
                super::init_chunk(self.fns.of(self.fns.lead), &mut self.chunk, values)
            }
            Order::Double => super::double_chunk(&mut self.chunk),
            Order::Sync => {}
            Order::Run(kernel, stores, repeats) => {
                // The table is picked once per order, outside the timed
                // loop. Two clock reads per thread and run, outside the
                // kernel loop: each thread's own time, to find a slow core.
                let fns = self.fns.of(stores);
                let start = Instant::now();
                for _ in 0..repeats {
                    super::run_kernel(fns, kernel, &mut self.chunk, &mut self.sums);
                }
                if let Some(slot) = orders.thread_ns.get(index) {
                    (slot.0).store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
                }
            }
            Order::ReadBack(want, errors) => {
                let part = super::read_back_chunk(&self.chunk, self.sums, want, errors);
                if let Some(slot) = orders.read_back.get(index)
                    && let Ok(mut slot) = slot.lock()
                {
                    *slot = part;
                }
            }
            Order::Quit => {}
        }
    }
}

/// What the leader asks of the team.
#[derive(Clone, Copy)]
enum Order {
    Init([f64; ARRAYS]),
    Double,
    /// Nothing: the team meets at the barriers, idle.
    Sync,
    Run(KernelId, StoreMode, usize),
    ReadBack([f64; ARRAYS], ArrayErrors),
    Quit,
}

/// The leader's orders. Which order and its kernel ride on the barrier
/// that releases the team (one word, in the line the release brings
/// anyway); the values of `Init` and `ReadBack` (never timed) wait here,
/// with what the members report back.
struct Orders {
    values: [AtomicU64; ARRAYS],
    /// Each member's own time in the last run, ns: written inside the
    /// timed window, so each on its own lines.
    thread_ns: Vec<Padded<AtomicU64>>,
    errors: Mutex<Option<ArrayErrors>>,
    read_back: Vec<Mutex<ReadBack>>,
}

const INIT: u64 = 0;
const DOUBLE: u64 = 1;
const RUN: u64 = 2;
const READ_BACK: u64 = 3;
const QUIT: u64 = 4;
const SYNC: u64 = 5;

impl Orders {
    fn new(members: usize) -> Orders {
        Orders {
            values: Default::default(),
            thread_ns: (0..members).map(|_| Padded(AtomicU64::new(0))).collect(),
            errors: Mutex::new(None),
            read_back: (0..members).map(|_| Mutex::default()).collect(),
        }
    }

    /// Stores what the order carries besides its word; returns the word:
    /// the kind in the low byte, the kernel in the next, the store mode in
    /// the bit above (1: streaming), the repeats above that.
    fn post(&self, order: Order) -> u64 {
        let store_values = |values: [f64; ARRAYS]| {
            for (slot, v) in self.values.iter().zip(values) {
                slot.store(v.to_bits(), Ordering::Relaxed);
            }
        };
        match order {
            Order::Init(values) => {
                store_values(values);
                INIT
            }
            Order::ReadBack(values, errors) => {
                store_values(values);
                if let Ok(mut e) = self.errors.lock() {
                    *e = Some(errors);
                }
                READ_BACK
            }
            Order::Double => DOUBLE,
            Order::Sync => SYNC,
            Order::Run(kernel, stores, repeats) => {
                let nt = u64::from(stores == StoreMode::Nt);
                RUN | (kernel as u64) << 8 | nt << 16 | (repeats as u64) << 17
            }
            Order::Quit => QUIT,
        }
    }

    /// The order behind `word`, read after the barrier that carried it.
    fn read(&self, word: u64) -> Order {
        let values =
            || std::array::from_fn(|i| f64::from_bits(self.values[i].load(Ordering::Relaxed)));
        match word & 0xff {
            INIT => Order::Init(values()),
            DOUBLE => Order::Double,
            SYNC => Order::Sync,
            RUN => match KERNELS.get(((word >> 8) & 0xff) as usize) {
                Some(k) => {
                    let stores = match (word >> 16) & 1 {
                        1 => StoreMode::Nt,
                        _ => StoreMode::Regular,
                    };
                    Order::Run(k.id, stores, (word >> 17) as usize)
                }
                None => Order::Quit,
            },
            READ_BACK => match self.errors.lock().ok().and_then(|e| *e) {
                Some(errors) => Order::ReadBack(values(), errors),
                None => Order::Quit,
            },
            _ => Order::Quit,
        }
    }
}

/// A member other than the leader: obeys orders until told to quit.
fn follow(m: &Member, orders: &Orders, part: &mut TeamPart) {
    loop {
        m.barrier();
        let order = orders.read(m.payload());
        part.obey(order, orders, m.index);
        m.barrier();
        if matches!(order, Order::Quit) {
            return;
        }
    }
}

/// The leader, as the protocol sees it: each call is one order to the team.
struct Leader<'m, 'o, 'a, 'c> {
    member: &'m Member<'m>,
    orders: &'o Orders,
    part: TeamPart<'a, 'c>,
    /// Each kernel's stores, by its id.
    stores: [StoreMode; KERNELS.len()],
}

impl Leader<'_, '_, '_, '_> {
    fn order(&mut self, order: Order) {
        let word = self.orders.post(order);
        self.member.barrier_with(word);
        self.part.obey(order, self.orders, 0);
        self.member.barrier();
    }
}

impl Drop for Leader<'_, '_, '_, '_> {
    /// However the protocol ends (done, an error, a panic), the team is let go.
    fn drop(&mut self) {
        self.order(Order::Quit);
    }
}

impl TargetArrays for Leader<'_, '_, '_, '_> {
    fn init(&mut self, values: [f64; ARRAYS]) {
        self.order(Order::Init(values));
    }
    fn double_a(&mut self) {
        self.order(Order::Double);
    }
    fn sync(&mut self) {
        self.order(Order::Sync);
    }
    fn run(&mut self, kernel: KernelId, repeats: usize) {
        let stores = self.stores[kernel as usize];
        self.order(Order::Run(kernel, stores, repeats));
    }
    fn use_stores(&mut self, kernel: KernelId, stores: StoreMode) -> bool {
        self.stores[kernel as usize] = stores;
        true
    }
    fn thread_seconds(&self, out: &mut [f64]) -> bool {
        for (slot, ns) in out.iter_mut().zip(&self.orders.thread_ns) {
            *slot = ns.0.load(Ordering::Relaxed) as f64 * 1e-9;
        }
        true
    }
    fn read_back(&mut self, want: [f64; ARRAYS], errors: ArrayErrors) -> ReadBack {
        self.order(Order::ReadBack(want, errors));
        let mut whole = ReadBack::default();
        for slot in &self.orders.read_back {
            if let Ok(part) = slot.lock() {
                whole.add(&part);
            }
        }
        whole
    }
}
