//! The success policy of Indexed Jobs (upstream `success_policy.go`): the
//! Job meets its success criteria early when a rule matches — all of the
//! rule's `succeededIndexes` succeeded, or at least `succeededCount` of them
//! (of all indexes when the rule lists none).

use k8s_openapi::api::batch::v1::SuccessPolicy;

use super::indexed::Intervals;

/// The reason of SuccessCriteriaMet/Complete when a success policy matched.
pub const REASON_SUCCESS_POLICY: &str = "SuccessPolicy";
/// The reason when the Job reached its completions.
pub const REASON_COMPLETIONS_REACHED: &str = "CompletionsReached";
/// Its message.
pub const MSG_COMPLETIONS_REACHED: &str = "Reached expected number of succeeded pods";

/// Upstream `matchSuccessPolicy`: the message (`Matched rules at index <i>`)
/// of the first rule that `succeeded` satisfies, if any.
pub fn match_success_policy(policy: Option<&SuccessPolicy>, completions: i32, succeeded: &Intervals) -> Option<String> {
    let policy = policy?;
    for (index, rule) in policy.rules.iter().enumerate() {
        let met = match &rule.succeeded_indexes {
            Some(s) => {
                let required = Intervals::parse(s, completions);
                if required.total() == 0 {
                    continue;
                }
                let matched = required.to_set().intersection(&succeeded.to_set()).count() as i32;
                match rule.succeeded_count {
                    Some(n) => matched >= n,
                    None => matched == required.total(),
                }
            }
            None => rule.succeeded_count.is_some_and(|n| n <= succeeded.total()),
        };
        if met {
            return Some(format!("Matched rules at index {index}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(rules: serde_json::Value) -> SuccessPolicy {
        serde_json::from_value(json!({ "rules": rules })).unwrap()
    }

    #[test]
    fn rules_as_upstream() {
        // Cases of upstream TestMatchSuccessPolicy.
        let done = Intervals::parse("0-2,4", 10);
        assert_eq!(match_success_policy(None, 10, &done), None);
        let p = policy(json!([{"succeededIndexes": "0-2"}]));
        assert_eq!(match_success_policy(Some(&p), 10, &done).as_deref(), Some("Matched rules at index 0"));
        let p = policy(json!([{"succeededIndexes": "0-3"}, {"succeededCount": 4}]));
        assert_eq!(match_success_policy(Some(&p), 10, &done).as_deref(), Some("Matched rules at index 1"));
        let p = policy(json!([{"succeededIndexes": "0-3", "succeededCount": 3}]));
        assert_eq!(match_success_policy(Some(&p), 10, &done).as_deref(), Some("Matched rules at index 0"));
        let p = policy(json!([{"succeededIndexes": "5-9", "succeededCount": 1}, {"succeededCount": 5}]));
        assert_eq!(match_success_policy(Some(&p), 10, &done), None);
    }
}
