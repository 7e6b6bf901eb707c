//! The time source of the Job and CronJob controllers, injectable so unit
//! tests drive schedules and deadlines deterministically (upstream passes a
//! `clock.Clock`).

use std::sync::Mutex;

/// Where "now" comes from.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> jiff::Timestamp;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> jiff::Timestamp {
        jiff::Timestamp::now()
    }
}

/// A clock that shows a set time until moved (for tests).
#[derive(Debug)]
pub struct FakeClock(Mutex<jiff::Timestamp>);

impl FakeClock {
    /// A clock stopped at `t`.
    pub fn new(t: jiff::Timestamp) -> Self {
        FakeClock(Mutex::new(t))
    }

    /// Moves the clock to `t`.
    pub fn set(&self, t: jiff::Timestamp) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = t;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> jiff::Timestamp {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
