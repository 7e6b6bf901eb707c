//! NodeResourcesFit's scoring strategies (upstream `least_allocated.go`,
//! `most_allocated.go`, `requested_to_capacity_ratio.go` and
//! `helper.BuildBrokenLinearFunction`): each maps per-resource
//! `(requested, allocatable)` to a 0–100 node score, weighted per resource.

use serde::Deserialize;

use super::ResourceSpec;
use crate::framework::MAX_NODE_SCORE;

/// The highest score a `RequestedToCapacityRatio` shape point may give
/// (upstream `MaxCustomPriorityScore`); points are scaled ×10 to 0–100.
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;

/// A point of the utilization → score function (upstream `UtilizationShapePoint`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UtilizationShapePoint {
    /// Utilization in percent, 0–100.
    #[serde(default)]
    pub utilization: i64,
    /// Score at that utilization, 0–10.
    #[serde(default)]
    pub score: i64,
}

/// A scoring strategy with what it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Favors nodes with the most free capacity (the default).
    LeastAllocated,
    /// Favors nodes with the least free capacity (bin packing).
    MostAllocated,
    /// A piecewise-linear function of utilization; points scaled to 0–100.
    RequestedToCapacityRatio(Vec<UtilizationShapePoint>),
}

/// `((capacity - requested) * 100) / capacity`, 0 when over capacity.
fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

/// `requested * 100 / capacity`, with requested capped at capacity (pods
/// without requests count the non-zero defaults and may exceed it).
fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

/// Upstream `BuildBrokenLinearFunction`: the first point's score up to its
/// utilization, linear (integer) interpolation between points, the last
/// point's score beyond.
pub fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for (i, &(u, s)) in shape.iter().enumerate() {
        if p <= u {
            if i == 0 {
                return s;
            }
            let (pu, ps) = shape[i - 1];
            return ps + (s - ps) * (p - pu) / (u - pu);
        }
    }
    shape.last().map_or(0, |&(_, s)| s)
}

impl Strategy {
    /// The upstream name (`LeastAllocated`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Strategy::LeastAllocated => "LeastAllocated",
            Strategy::MostAllocated => "MostAllocated",
            Strategy::RequestedToCapacityRatio(_) => "RequestedToCapacityRatio",
        }
    }

    /// The node score for per-resource `requested`/`allocatable` (same
    /// order as `resources`); resources with zero allocatable are skipped.
    pub fn score(&self, resources: &[ResourceSpec], requested: &[i64], allocatable: &[i64]) -> i64 {
        let (mut node_score, mut weight_sum) = (0i64, 0i64);
        match self {
            Strategy::LeastAllocated | Strategy::MostAllocated => {
                for i in 0..requested.len() {
                    if allocatable[i] == 0 {
                        continue;
                    }
                    let s = if *self == Strategy::LeastAllocated {
                        least_requested_score(requested[i], allocatable[i])
                    } else {
                        most_requested_score(requested[i], allocatable[i])
                    };
                    node_score += s * resources[i].weight;
                    weight_sum += resources[i].weight;
                }
                if weight_sum == 0 {
                    return 0;
                }
                node_score / weight_sum
            }
            Strategy::RequestedToCapacityRatio(points) => {
                let shape: Vec<(i64, i64)> = points
                    .iter()
                    .map(|p| (p.utilization, p.score * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE)))
                    .collect();
                for i in 0..requested.len() {
                    if allocatable[i] == 0 {
                        continue;
                    }
                    let (req, cap) = (requested[i], allocatable[i]);
                    let s = if req > cap { broken_linear(&shape, 100) } else { broken_linear(&shape, req * 100 / cap) };
                    // Upstream counts only resources that scored above zero.
                    if s > 0 {
                        node_score += s * resources[i].weight;
                        weight_sum += resources[i].weight;
                    }
                }
                if weight_sum == 0 {
                    return 0;
                }
                (node_score as f64 / weight_sum as f64).round() as i64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_linear_function_interpolates_between_points() {
        // Upstream TestBrokenLinearFunction: points (10,1) (90,9).
        let shape = [(10, 1), (90, 9)];
        for (p, want) in
            [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9), (110, 9)]
        {
            assert_eq!(broken_linear(&shape, p), want, "p={p}");
        }
        let shape = [(0, 2), (40, 10), (100, 0)];
        for (p, want) in [(0, 2), (20, 6), (40, 10), (70, 5), (100, 0), (120, 0)] {
            assert_eq!(broken_linear(&shape, p), want, "p={p}");
        }
    }

    #[test]
    fn least_and_most_requested_scores_per_resource() {
        let res = super::super::default_resources();
        // cpu 3000/4000, memory 5000/10000: least ((25)+(50))/2 = 37; most (75+50)/2 = 62.
        assert_eq!(Strategy::LeastAllocated.score(&res, &[3000, 5000], &[4000, 10000]), 37);
        assert_eq!(Strategy::MostAllocated.score(&res, &[3000, 5000], &[4000, 10000]), 62);
        // Over capacity: least gives 0, most caps at 100.
        assert_eq!(Strategy::LeastAllocated.score(&res, &[5000, 10000], &[4000, 10000]), 0);
        assert_eq!(Strategy::MostAllocated.score(&res, &[5000, 10000], &[4000, 10000]), 100);
        assert_eq!(Strategy::LeastAllocated.score(&res, &[0, 0], &[0, 0]), 0);
    }
}
