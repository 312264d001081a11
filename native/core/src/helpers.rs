//! Query helpers: threads that take part of one query's work beside the thread that asked it
//! (a broad query's postings, or the semantic channel while BM25 runs).
//!
//! One fewer than [`threads`] (at most three), none on one. They are not rayon's global
//! pool, so a query never waits behind an indexing run's parse jobs, and a query only ever
//! asks for helpers that are idle: one busy with another query is not waited for. A forked
//! child inherits the pool but not its threads: there a query has no helpers.
//!
//! [`in_own_pool`] is the same care for all other parallel work: a pool this process owns,
//! rebuilt in a child. Every function of this crate that runs a parallel iterator (or calls
//! candle or `tokenizers`, which run theirs on the current pool) enters it, so none ever
//! touches rayon's global pool; on a pool thread already, it runs in place.

use std::num::NonZero;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

struct Helpers {
    pool: rayon::ThreadPool,
    /// Threads of the pool no query holds.
    idle: AtomicUsize,
    /// The process that started the threads.
    pid: u32,
}

static HELPERS: OnceLock<Option<Helpers>> = OnceLock::new();

fn helpers() -> Option<&'static Helpers> {
    HELPERS
        .get_or_init(|| {
            let threads = threads().saturating_sub(1).min(3);
            if threads == 0 {
                return None;
            }
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("coderecall-query-{i}"))
                .build()
                .ok()?;
            Some(Helpers {
                pool,
                idle: AtomicUsize::new(threads),
                pid: std::process::id(),
            })
        })
        .as_ref()
        .filter(|helpers| helpers.pid == std::process::id())
}

/// Threads the native core works with: `RAYON_NUM_THREADS` when set to a positive number
/// (so `RAYON_NUM_THREADS=1` keeps every query and index run on one thread), else the cores.
pub fn threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|n| n.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(NonZero::get))
        .unwrap_or(1)
}

/// How many helpers there are (0 on one core).
pub(crate) fn count() -> usize {
    helpers().map_or(0, |h| h.pool.current_num_threads())
}

/// Idle helpers held by one query until it is dropped.
pub(crate) struct Lease {
    helpers: &'static Helpers,
    count: usize,
}

impl Lease {
    /// The pool to spawn the held helpers' work on: at most [`Lease::count`] jobs at a time.
    pub(crate) fn pool(&self) -> &'static rayon::ThreadPool {
        &self.helpers.pool
    }

    pub(crate) fn count(&self) -> usize {
        self.count
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.helpers.idle.fetch_add(self.count, Ordering::Release);
    }
}

/// Up to `wanted` idle helpers, or `None` when none is idle.
pub(crate) fn lease(wanted: usize) -> Option<Lease> {
    let helpers = helpers()?;
    let mut idle = helpers.idle.load(Ordering::Relaxed);
    loop {
        let count = wanted.min(idle);
        if count == 0 {
            return None;
        }
        match helpers.idle.compare_exchange_weak(
            idle,
            idle - count,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => return Some(Lease { helpers, count }),
            Err(now) => idle = now,
        }
    }
}

/// `(a(), b())`, with `b` on an idle helper while this thread runs `a`; both here, one after
/// the other, when no helper is idle.
#[cfg_attr(not(feature = "embed"), allow(dead_code))] // the semantic channel's
pub(crate) fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    let Some(lease) = lease(1) else {
        return (a(), b());
    };
    let mut rb = None;
    let ra = lease.pool().in_place_scope(|scope| {
        scope.spawn(|_| rb = Some(b()));
        a()
    });
    drop(lease);
    (ra, rb.expect("the scope waits for its jobs"))
}

/// A pool of [`threads`] threads that belongs to this process: parallel iterators run there
/// instead of on rayon's global pool, whose threads a forked child does not have (a child
/// that inherited a started global pool waits forever on it). Rebuilt in a forked child;
/// `None` if no thread can be started.
fn own_pool() -> Option<Arc<rayon::ThreadPool>> {
    static POOL: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((owner, pool)) = slot.as_ref()
        && *owner == pid
    {
        return Some(Arc::clone(pool));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads())
        .thread_name(|i| format!("coderecall-{i}"))
        .build()
        .ok()
        .map(Arc::new);
    *slot = pool.as_ref().map(|pool| (pid, Arc::clone(pool)));
    pool
}

/// Runs `f` on [`own_pool`] (here, on one thread, if it cannot be started). A caller already
/// on a worker of a pool other than the query helpers (the own pool, or one a caller built
/// and entered) stays on it.
pub fn in_own_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    // Helpers not started yet cannot be this thread's pool (and are not started here).
    let on_helper = || {
        HELPERS
            .get()
            .and_then(Option::as_ref)
            .is_some_and(|h| h.pool.current_thread_index().is_some())
    };
    if rayon::current_thread_index().is_some() && !on_helper() {
        return f();
    }
    match own_pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_runs_both_and_leases_are_given_back() {
        let idle = count();
        let (a, b) = join(|| 1, || std::thread::current().name().map(str::to_owned));
        assert_eq!(a, 1);
        if idle > 0 {
            assert!(b.is_some_and(|name| name.starts_with("coderecall-query-")));
        }
        // Every helper is idle again, and a lease never takes more than there are.
        let all = lease(usize::MAX);
        assert_eq!(all.as_ref().map_or(0, Lease::count), idle);
        assert!(lease(1).is_none(), "all helpers are held");
        let (a, b) = join(|| 2, || std::thread::current().name().map(str::to_owned));
        assert_eq!(a, 2);
        assert_eq!(
            b,
            std::thread::current().name().map(str::to_owned),
            "ran here"
        );
        drop(all);
        assert_eq!(lease(usize::MAX).map_or(0, |l| l.count()), idle);
    }
}
