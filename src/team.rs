//! A team of OS threads, each pinned to one CPU before it does anything,
//! running one SPMD body in lock step with a spinning barrier.
//!
//! The team knows nothing about kernels: it pins, hands each member its own
//! state (its chunks of the arrays), and gives the body a barrier. The body
//! is written like an OpenMP parallel region. The calling thread only waits.

use crate::error::{Error, Result};
use crate::sys;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// A sense-free, generation-counting barrier that spins (then yields, so an
/// oversubscribed team still makes progress). Wake-up is a cache-line
/// transfer rather than a futex round trip.
pub struct SpinBarrier {
    arrived: AtomicUsize,
    generation: AtomicUsize,
    /// A word one party leaves for the others as it arrives; it travels
    /// in the cache line the release already brings.
    payload: AtomicU64,
    parties: usize,
}

impl SpinBarrier {
    pub fn new(parties: usize) -> Self {
        SpinBarrier {
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            payload: AtomicU64::new(0),
            parties,
        }
    }

    /// Leaves `payload` for the other parties, then waits: each reads it
    /// with [`payload`](Self::payload) once released.
    pub fn wait_with(&self, payload: u64) {
        // Ordered before this party's arrival, so before the release.
        self.payload.store(payload, Ordering::Relaxed);
        self.wait();
    }

    /// The word left by [`wait_with`](Self::wait_with) before the last release.
    pub fn payload(&self) -> u64 {
        self.payload.load(Ordering::Relaxed)
    }

    pub fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            // Reset before releasing: released threads may arrive again at once.
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if spins < 1 << 16 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// What a member of the team knows about itself.
pub struct Member<'a> {
    /// 0-based thread number; member 0 is the leader that keeps time.
    pub index: usize,
    pub team_size: usize,
    /// The CPU this member was pinned to.
    pub cpu: usize,
    barrier: &'a SpinBarrier,
}

impl Member<'_> {
    pub fn barrier(&self) {
        self.barrier.wait();
    }
    /// A barrier at which this member leaves one word for the others.
    pub fn barrier_with(&self, payload: u64) {
        self.barrier.wait_with(payload);
    }
    /// The word a member left at the barrier just passed.
    pub fn payload(&self) -> u64 {
        self.barrier.payload()
    }
    pub fn is_leader(&self) -> bool {
        self.index == 0
    }
}

/// What one member returns, with the CPU it was found on after pinning.
pub struct MemberResult<R> {
    pub observed_cpu: Option<usize>,
    pub value: R,
}

/// Spawns one thread per entry of `cpus`, pins it, and runs `body` with that
/// member's `state`. All members pin before any runs the body, so first touch
/// inside the body lands on the right node. Fails (without running the
/// body) if any member cannot be pinned.
pub fn run<S, R, F>(cpus: &[usize], states: Vec<S>, body: F) -> Result<Vec<MemberResult<R>>>
where
    S: Send,
    R: Send,
    F: Fn(&Member, S) -> R + Sync,
{
    assert_eq!(cpus.len(), states.len(), "one state per thread");
    let barrier = SpinBarrier::new(cpus.len());
    // Until every thread exists nobody may wait at the barrier: a spawn
    // that fails (a pid limit, `ulimit -u`) would leave the others there.
    let start = AtomicUsize::new(PENDING);
    let pin_failed = AtomicBool::new(false);
    let pin_errors: std::sync::Mutex<Vec<String>> = Default::default();
    let mut spawn_error = None;
    let outcomes: Vec<Option<MemberResult<R>>> = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(cpus.len());
        for (index, (&cpu, state)) in cpus.iter().zip(states).enumerate() {
            let (barrier, start, pin_failed, pin_errors, body) =
                (&barrier, &start, &pin_failed, &pin_errors, &body);
            let spawned = std::thread::Builder::new()
                .name(format!("membw-{index}"))
                .spawn_scoped(scope, move || {
                    if !wait_for_start(start) {
                        return None;
                    }
                    if let Err(e) = sys::pin_current_thread(cpu) {
                        pin_failed.store(true, Ordering::Relaxed);
                        if let Ok(mut errs) = pin_errors.lock() {
                            errs.push(format!("cannot pin thread {index} to CPU {cpu}: {e}"));
                        }
                    }
                    let observed_cpu = sys::current_cpu();
                    barrier.wait();
                    if pin_failed.load(Ordering::Relaxed) {
                        return None;
                    }
                    let member = Member {
                        index,
                        team_size: cpus.len(),
                        cpu,
                        barrier,
                    };
                    Some(MemberResult {
                        observed_cpu,
                        value: body(&member, state),
                    })
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawn_error = Some(format!(
                        "cannot start thread {index} of {}: {e}",
                        cpus.len()
                    ));
                    break;
                }
            }
        }
        let go = if spawn_error.is_some() { ABORT } else { GO };
        start.store(go, Ordering::Release);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    if let Some(e) = spawn_error {
        return Err(Error::Runtime(e));
    }
    if pin_failed.load(Ordering::Relaxed) {
        let errs = pin_errors.into_inner().unwrap_or_default();
        return Err(Error::Runtime(errs.join("; ")));
    }
    Ok(outcomes.into_iter().flatten().collect())
}

const PENDING: usize = 0;
const GO: usize = 1;
const ABORT: usize = 2;

/// Waits until the spawner says whether every thread of the team exists.
fn wait_for_start(start: &AtomicUsize) -> bool {
    loop {
        match start.load(Ordering::Acquire) {
            PENDING => std::thread::yield_now(),
            state => return state == GO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_pinned_and_synchronized() {
        let cpu = sys::current_cpu().unwrap();
        let cpus = vec![cpu; 3];
        let counter = AtomicUsize::new(0);
        let results = run(&cpus, vec![(); 3], |m, ()| {
            for round in 0..50 {
                counter.fetch_add(1, Ordering::Relaxed);
                m.barrier();
                // Everyone has added for this round before anyone reads.
                assert!(counter.load(Ordering::Relaxed) >= 3 * (round + 1));
                m.barrier();
            }
            m.index
        })
        .unwrap();
        let indices: Vec<usize> = results.iter().map(|r| r.value).collect();
        assert_eq!(indices, vec![0, 1, 2]);
        assert!(results.iter().all(|r| r.observed_cpu == Some(cpu)));
    }

    #[test]
    fn an_unpinnable_cpu_fails_without_running_the_body() {
        let ran = AtomicBool::new(false);
        let err = run(&[0, 5000], vec![(), ()], |_, ()| {
            ran.store(true, Ordering::Relaxed)
        });
        assert!(err.is_err());
        assert!(!ran.load(Ordering::Relaxed));
    }
}
