//! Upstream's `parallelize.Parallelizer`: runs an index-based function on
//! a persistent worker pool (rayon; spawning threads per cycle costs more
//! than the work) and returns the results in index order, so a parallel
//! run yields exactly what a sequential one does.

use std::sync::OnceLock;

use rayon::prelude::*;

/// Below this many items the call stays on the current thread.
pub const MIN_PARALLEL_ITEMS: usize = 64;

/// How many threads to use for `configured` workers: at most the
/// machine's available parallelism.
pub fn workers(configured: usize) -> usize {
    // Read once: on Linux every call re-reads the cgroup CPU quota files,
    // which showed up as ~3 % of the server's CPU when asked per cycle.
    static CPUS: OnceLock<usize> = OnceLock::new();
    let cpus = *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    configured.clamp(1, cpus)
}

fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(workers(usize::MAX))
            .thread_name(|i| format!("kube-scheduler-worker-{i}"))
            .build()
            .expect("the scheduler's worker pool starts")
    })
}

/// `(0..n).map(f)` computed on the worker pool when `workers > 1` (in
/// chunks of at least `n / (4 × workers)` items); results are in index order.
pub fn map<T: Send, F: Fn(usize) -> T + Sync + Send>(n: usize, workers: usize, f: F) -> Vec<T> {
    if workers <= 1 || n < MIN_PARALLEL_ITEMS {
        return (0..n).map(f).collect();
    }
    let min_len = (n / (4 * workers)).max(1);
    pool().install(|| (0..n).into_par_iter().with_min_len(min_len).map(f).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn parallel_results_are_in_index_order() {
        let seq: Vec<usize> = (0..1000).map(|i| i * i).collect();
        assert_eq!(super::map(1000, 4, |i| i * i), seq);
        assert_eq!(super::map(5, 4, |i| i), vec![0, 1, 2, 3, 4]);
    }
}
