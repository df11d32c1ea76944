//! A team of OS threads, each pinned to one CPU before it does anything,
//! running one SPMD body in lock step with a spinning barrier.
//!
//! The team knows nothing about kernels: it pins, hands each member its own
//! state (its chunks of the arrays), and gives the body a barrier. The body
//! is written like an OpenMP parallel region. The calling thread only waits.

use crate::error::{Error, Result};
use crate::sys;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A value alone on its cache lines: 128 bytes, the unit in which x86's
/// adjacent-line prefetcher (and Arm's larger lines) move data, so that a
/// word one thread writes never shares a line with another's.
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct Padded<T>(pub T);

/// A dissemination barrier that spins (then yields, so an oversubscribed
/// team still makes progress). In round k each member signals the member
/// 2^k places after it and waits for the one 2^k places before it, so after
/// ⌈log₂ n⌉ rounds every member has heard, directly or through others, from
/// every other. Each flag is written by one member and read by one: no
/// arrival invalidates a line another member spins on, nobody polls a list
/// of others, and there is no release phase. Positions follow CPU numbers
/// (the leader first), so early rounds pair neighbours (SMT siblings, an
/// L3) and only the last cross sockets. At 128 threads a crossing is 7
/// rounds of one line transfer each; at 2 threads, one.
pub struct SpinBarrier {
    /// `flags[round * n + p]`: written by the member that signals position
    /// `p` in `round`, read only by `p`.
    flags: Box<[Padded<AtomicU64>]>,
    /// Barriers each position has entered; written and read by its member.
    epochs: Box<[Padded<AtomicU64>]>,
    rounds: usize,
    /// Position of each member, by member index.
    position: Box<[usize]>,
    /// A word one party leaves for the others as it arrives.
    payload: Padded<AtomicU64>,
}

impl SpinBarrier {
    /// A barrier for members pinned to `cpus` (member order): member 0
    /// first, the others placed by CPU number.
    pub fn for_cpus(cpus: &[usize]) -> Self {
        let n = cpus.len();
        let mut order: Vec<usize> = (1..n).collect();
        order.sort_by_key(|&m| (cpus[m], m));
        let mut position = vec![0; n];
        for (p, &m) in order.iter().enumerate() {
            position[m] = p + 1;
        }
        let rounds = n.next_power_of_two().trailing_zeros() as usize;
        let padded = |count: usize| (0..count).map(|_| Padded::default()).collect();
        SpinBarrier {
            flags: padded(rounds * n),
            epochs: padded(n),
            rounds,
            position: position.into_boxed_slice(),
            payload: Padded(AtomicU64::new(0)),
        }
    }

    /// Leaves `payload` for the other parties, then waits: each reads it
    /// with [`payload`](Self::payload) once released.
    pub fn wait_with(&self, member: usize, payload: u64) {
        // Ordered before this party's first signal, so before everyone's exit.
        self.payload.0.store(payload, Ordering::Relaxed);
        self.wait(member);
    }

    /// The word left by [`wait_with`](Self::wait_with) before the last release.
    pub fn payload(&self) -> u64 {
        self.payload.0.load(Ordering::Relaxed)
    }

    pub fn wait(&self, member: usize) {
        let n = self.epochs.len();
        let p = self.position[member];
        let epoch = self.epochs[p].0.load(Ordering::Relaxed) + 1;
        self.epochs[p].0.store(epoch, Ordering::Relaxed);
        for round in 0..self.rounds {
            let partner = (p + (1 << round)) % n;
            self.flags[round * n + partner]
                .0
                .store(epoch, Ordering::Release);
            // A partner already one barrier further signals a later epoch:
            // it passed this one, so this round of it is done too.
            let mine = &self.flags[round * n + p].0;
            spin_until(|| mine.load(Ordering::Acquire) >= epoch);
        }
    }
}

/// How long a wait yields between looks before it sleeps between them.
const DOZE_AFTER: Duration = Duration::from_millis(10);
/// The sleep between looks of a long wait.
const DOZE: Duration = Duration::from_micros(50);

/// Spins until `done`. After 2^16 looks it yields between looks, so a team
/// with more threads than CPUs still makes progress; once it has waited
/// [`DOZE_AFTER`] it sleeps [`DOZE`] between looks, so the CPU of a member
/// that waits on a long serial step (the leader's bookkeeping, another
/// member's first touch) goes idle. A wait already that long ends at most
/// one DOZE late; a short wait never reads the clock.
fn spin_until(done: impl Fn() -> bool) {
    let mut spins = 0u32;
    let mut since: Option<Instant> = None;
    while !done() {
        if spins < 1 << 16 {
            spins += 1;
            std::hint::spin_loop();
        } else if since.get_or_insert_with(Instant::now).elapsed() < DOZE_AFTER {
            std::thread::yield_now();
        } else {
            std::thread::sleep(DOZE);
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
        self.barrier.wait(self.index);
    }
    /// A barrier at which this member leaves one word for the others.
    pub fn barrier_with(&self, payload: u64) {
        self.barrier.wait_with(self.index, payload);
    }
    /// The word a member left at the barrier just passed.
    pub fn payload(&self) -> u64 {
        self.barrier.payload()
    }
    pub fn is_leader(&self) -> bool {
        self.index == 0
    }
}

/// What one member returns, with the CPU it was found on after pinning
/// and the CPUs the kernel then let it run on.
pub struct MemberResult<R> {
    pub observed_cpu: Option<usize>,
    pub affinity: Option<Vec<usize>>,
    pub value: R,
}

/// Spawns one thread per entry of `cpus`, pins it (where `pin`; else the
/// scheduler places it, starting anywhere this process may run), and runs
/// `body` with that member's `state`. All members pin before any runs the
/// body, so first touch inside the body lands on the right node. Fails
/// (without running the body) if any member cannot be pinned.
pub fn run<S, R, F>(
    cpus: &[usize],
    pin: bool,
    states: Vec<S>,
    body: F,
) -> Result<Vec<MemberResult<R>>>
where
    S: Send,
    R: Send,
    F: Fn(&Member, S) -> R + Sync,
{
    assert_eq!(cpus.len(), states.len(), "one state per thread");
    // Owned by the team (on the heap, its nodes padded), not a stack local.
    let barrier = Box::new(SpinBarrier::for_cpus(cpus));
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
                (&*barrier, &start, &pin_failed, &pin_errors, &body);
            let spawned = std::thread::Builder::new()
                .name(format!("membw-{index}"))
                .spawn_scoped(scope, move || {
                    if !wait_for_start(start) {
                        return None;
                    }
                    let pinned = if pin {
                        sys::pin_current_thread(cpu)
                    } else {
                        Ok(())
                    };
                    if let Err(e) = pinned {
                        pin_failed.store(true, Ordering::Relaxed);
                        if let Ok(mut errs) = pin_errors.lock() {
                            errs.push(format!("cannot pin thread {index} to CPU {cpu}: {e}"));
                        }
                    }
                    let (observed_cpu, affinity) = (sys::current_cpu(), sys::current_affinity());
                    barrier.wait(index);
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
                        affinity,
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
    spin_until(|| start.load(Ordering::Acquire) != PENDING);
    start.load(Ordering::Acquire) == GO
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_pinned_and_synchronized() {
        let cpu = sys::current_cpu().unwrap();
        let cpus = vec![cpu; 3];
        let counter = AtomicUsize::new(0);
        let results = run(&cpus, true, vec![(); 3], |m, ()| {
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
    fn many_members_meet_and_carry_the_payload() {
        // 9 members: 4 rounds, the last wrapping around; more threads than
        // CPUs here (the spinners yield).
        let cpu = sys::current_cpu().unwrap();
        let n = 9;
        let counter = AtomicUsize::new(0);
        run(&vec![cpu; n], true, vec![(); n], |m, ()| {
            for round in 0..30u64 {
                counter.fetch_add(1, Ordering::Relaxed);
                if m.is_leader() {
                    m.barrier_with(round);
                } else {
                    m.barrier();
                }
                assert_eq!(m.payload(), round);
                assert!(counter.load(Ordering::Relaxed) >= n * (round as usize + 1));
                m.barrier();
            }
        })
        .unwrap();
        assert_eq!(counter.load(Ordering::Relaxed), n * 30);
    }

    #[test]
    fn the_leader_comes_first_and_the_rest_in_cpu_order() {
        let b = SpinBarrier::for_cpus(&[5, 3, 9, 1, 2, 8]);
        assert_eq!(&*b.position, &[0, 3, 5, 1, 2, 4]);
        // ⌈log₂ 6⌉ rounds, a flag per round and position.
        assert_eq!(b.rounds, 3);
        assert_eq!(b.flags.len(), 18);
        assert_eq!(SpinBarrier::for_cpus(&[0]).rounds, 0);
        assert_eq!(
            SpinBarrier::for_cpus(&(0..128).collect::<Vec<_>>()).rounds,
            7
        );
        assert_eq!(std::mem::align_of::<Padded<AtomicU64>>(), 128);
    }

    #[test]
    fn an_unpinnable_cpu_fails_without_running_the_body() {
        let ran = AtomicBool::new(false);
        let err = run(&[0, 5000], true, vec![(), ()], |_, ()| {
            ran.store(true, Ordering::Relaxed)
        });
        assert!(err.is_err());
        assert!(!ran.load(Ordering::Relaxed));
    }
}
