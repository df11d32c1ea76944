//! Times one barrier crossing per thread count: the team's dissemination barrier
//! against the central barrier it replaced (one line holding the arrival
//! count, the generation the spinners read, and the payload), each thread
//! pinned to its own CPU. Run by `bench/barrier.sh`; on a 2-core VM it
//! shows the new design is no slower at 1-2 threads; on a big node it shows
//! how each grows with the thread count.
//!
//! `cargo run --release --example barrier -- [CROSSINGS] [ROUNDS]`

use membw::team::SpinBarrier;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// The barrier before this one: every arrival a read-modify-write on the
/// line the early arrivals spin on.
struct Central {
    arrived: AtomicUsize,
    generation: AtomicUsize,
    payload: AtomicU64,
    parties: usize,
}

impl Central {
    fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        while self.generation.load(Ordering::Acquire) == generation {
            std::hint::spin_loop();
        }
    }
}

/// Nanoseconds per crossing, `threads` pinned to `cpus`.
fn time(cpus: &[usize], crossings: u64, wait: &(dyn Fn(usize) + Sync)) -> f64 {
    let start = AtomicU64::new(0);
    let elapsed = AtomicU64::new(0);
    std::thread::scope(|s| {
        for (member, &cpu) in cpus.iter().enumerate() {
            let (start, elapsed) = (&start, &elapsed);
            s.spawn(move || {
                membw::sys::pin_current_thread(cpu).expect("pin");
                // Everyone pinned and spinning before the clock starts.
                wait(member);
                if member == 0 {
                    start.store(1, Ordering::Release);
                }
                let t0 = Instant::now();
                for _ in 0..crossings {
                    wait(member);
                }
                if member == 0 {
                    elapsed.store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                }
            });
        }
    });
    elapsed.load(Ordering::Relaxed) as f64 / crossings as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let crossings = args.first().copied().unwrap_or(200_000);
    let rounds = args.get(1).copied().unwrap_or(5) as usize;
    let allowed = membw::sys::thread_affinity(0).expect("the affinity mask");
    println!(
        "threads  central ns  new ns  new/central  (median of {rounds} alternated rounds, {crossings} crossings each)"
    );
    let mut threads = 1;
    while threads <= allowed.len() {
        let cpus = &allowed[..threads];
        let (mut central, mut new) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let c = Central {
                arrived: AtomicUsize::new(0),
                generation: AtomicUsize::new(0),
                payload: AtomicU64::new(0),
                parties: threads,
            };
            central.push(time(cpus, crossings, &|_| c.wait()));
            let t = SpinBarrier::for_cpus(cpus);
            new.push(time(cpus, crossings, &|m| t.wait(m)));
            let _ = c.payload.load(Ordering::Relaxed);
        }
        let (c, t) = (median(central), median(new));
        println!("{threads:7}  {c:10.1}  {t:7.1}  {:12.2}", t / c);
        threads = if threads < 2 {
            threads + 1
        } else {
            threads * 2
        };
    }
}
