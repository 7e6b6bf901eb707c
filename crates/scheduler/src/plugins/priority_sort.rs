//! PrioritySort (upstream `plugins/queuesort`): the active queue pops the
//! pod with the highest `spec.priority` first, then the one that entered
//! the queue earliest. The queue applies [`less`] directly.

use std::sync::Arc;
use std::time::Instant;

use crate::framework::{ExtensionPoint, Handle, Plugin};

use super::names;

/// The plugin (it only marks the profile's queue order).
pub struct PrioritySort;

/// Builds the plugin; it takes no args.
pub fn new(_args: Option<&serde_json::Value>, _handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(PrioritySort))
}

/// Whether `(priority a, queued at a)` sorts before `b` (upstream `Less`).
pub fn less(a: (i32, Instant), b: (i32, Instant)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

impl Plugin for PrioritySort {
    fn name(&self) -> &'static str {
        names::PRIORITY_SORT
    }
    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::QueueSort]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn higher_priority_then_earlier_first() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(1);
        assert!(less((10, t1), (5, t0)));
        assert!(less((5, t0), (5, t1)));
        assert!(!less((5, t1), (5, t0)));
        assert!(!less((5, t0), (10, t1)));
    }
}
