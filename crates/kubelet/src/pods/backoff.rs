//! Per-container restart back-off (upstream's kubelet `flowcontrol.Backoff`
//! keyed by pod and container): CrashLoopBackOff waits 10 s, doubling to
//! 5 min, and forgets a container that ran for 10 min (2 × the maximum)
//! since its last restart. Image pulls use the same shape for
//! ImagePullBackOff.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Upstream's initial container restart delay.
pub const INITIAL: Duration = Duration::from_secs(10);
/// Upstream's maximum container restart delay (MaxContainerBackOff).
pub const MAX: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, Copy)]
struct Entry {
    delay: Duration,
    /// When the last restart was allowed (the back-off runs from here).
    last: Instant,
}

/// Back-off state for many keys (e.g. `<pod uid>/<container>`).
#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    entries: HashMap<String, Entry>,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(INITIAL, MAX)
    }
}

impl Backoff {
    /// A back-off starting at `initial`, doubling up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff { initial, max, entries: HashMap::new() }
    }

    /// How much longer `key` must wait before its next attempt, measured
    /// from its last allowed attempt (zero: it may go now).
    pub fn remaining(&self, key: &str, now: Instant) -> Duration {
        match self.entries.get(key) {
            Some(e) => (e.last + e.delay).saturating_duration_since(now),
            None => Duration::ZERO,
        }
    }

    /// Records an attempt of `key` at `now` and returns the delay the next
    /// one will have to wait: the first attempt starts the back-off at the
    /// initial delay; each later one doubles it up to the maximum, unless
    /// the previous attempt lies more than 2 × max in the past (then the
    /// back-off starts over, as upstream's `IsInBackOffSince`/GC do).
    pub fn next(&mut self, key: &str, now: Instant) -> Duration {
        let (initial, max) = (self.initial, self.max);
        let e = self.entries.entry(key.to_string()).or_insert(Entry { delay: Duration::ZERO, last: now });
        e.delay = if e.delay.is_zero() || now.saturating_duration_since(e.last) > 2 * max {
            initial
        } else {
            (e.delay * 2).min(max)
        };
        e.last = now;
        e.delay
    }

    /// The delay `key` is currently waiting out (zero if none).
    pub fn current(&self, key: &str) -> Duration {
        self.entries.get(key).map(|e| e.delay).unwrap_or_default()
    }

    /// Forgets `key` (e.g. the container ran long enough or the pod is gone).
    pub fn reset(&mut self, key: &str) {
        self.entries.remove(key);
    }

    /// Forgets every key starting with `prefix` (all containers of a pod).
    pub fn reset_prefix(&mut self, prefix: &str) {
        self.entries.retain(|k, _| !k.starts_with(prefix));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_loop_back_off_doubles_from_10s_to_5min() {
        let mut b = Backoff::default();
        let t0 = Instant::now();
        assert_eq!(b.remaining("p/c", t0), Duration::ZERO);
        let delays: Vec<u64> = (0..7).map(|i| b.next("p/c", t0 + Duration::from_secs(i)).as_secs()).collect();
        assert_eq!(delays, [10, 20, 40, 80, 160, 300, 300]);
        assert_eq!(b.remaining("p/c", t0 + Duration::from_secs(6)), Duration::from_secs(300));
        assert_eq!(b.remaining("other", t0), Duration::ZERO);
    }

    #[test]
    fn back_off_starts_over_after_ten_quiet_minutes() {
        let mut b = Backoff::default();
        let t0 = Instant::now();
        b.next("p/c", t0);
        b.next("p/c", t0);
        assert_eq!(b.next("p/c", t0 + Duration::from_secs(601)), INITIAL);
        b.reset_prefix("p/");
        assert_eq!(b.remaining("p/c", t0), Duration::ZERO);
    }
}
