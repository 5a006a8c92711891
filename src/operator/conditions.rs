//! Conditions in the Kubernetes convention: one entry per type, whose
//! `lastTransitionTime` moves only when its status does.

use crate::spec::Condition;

/// One condition to set.
#[derive(Clone, Debug, PartialEq)]
pub struct Set<'a> {
    pub type_: &'a str,
    pub status: bool,
    pub reason: &'a str,
    pub message: String,
}

impl<'a> Set<'a> {
    pub fn new(type_: &'a str, status: bool, reason: &'a str, message: impl Into<String>) -> Self {
        Self {
            type_,
            status,
            reason,
            message: message.into(),
        }
    }

    /// `Paused`, set while `trellis.dev/paused` is `"true"`.
    pub fn paused() -> Self {
        Self::new(
            "Paused",
            true,
            "PausedByAnnotation",
            "trellis.dev/paused is \"true\": nothing is reconciled",
        )
    }
}

/// Sets `change` among `conditions` at `generation`; `now` (RFC 3339)
/// becomes its transition time when its status changed or it is new.
pub fn set(conditions: &mut Vec<Condition>, change: Set<'_>, generation: Option<i64>, now: &str) {
    let status = if change.status { "True" } else { "False" }.to_string();
    let new = Condition {
        type_: change.type_.to_string(),
        status: status.clone(),
        reason: change.reason.to_string(),
        message: change.message,
        last_transition_time: Some(now.to_string()),
        observed_generation: generation,
    };
    match conditions.iter_mut().find(|c| c.type_ == change.type_) {
        Some(old) => {
            let since = if old.status == status {
                old.last_transition_time.clone()
            } else {
                None
            };
            *old = Condition {
                last_transition_time: since.or(new.last_transition_time),
                ..new
            };
        }
        None => conditions.push(new),
    }
}

/// Removes the condition of `type_`, if any.
pub fn remove(conditions: &mut Vec<Condition>, type_: &str) {
    conditions.retain(|c| c.type_ != type_);
}

/// The condition of `type_`, if set.
pub fn get<'c>(conditions: &'c [Condition], type_: &str) -> Option<&'c Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    get(conditions, type_).is_some_and(|c| c.status == "True")
}

/// The current time in RFC 3339, as conditions carry it.
pub fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_moves_only_with_the_status() {
        let mut conditions = Vec::new();
        set(
            &mut conditions,
            Set::new("Ready", false, "Ingesting", "building"),
            Some(1),
            "t1",
        );
        set(
            &mut conditions,
            Set::new("Ready", false, "Ingesting", "still building"),
            Some(2),
            "t2",
        );
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].last_transition_time.as_deref(), Some("t1"));
        assert_eq!(conditions[0].message, "still building");
        assert_eq!(conditions[0].observed_generation, Some(2));
        set(
            &mut conditions,
            Set::new("Ready", true, "IndexPublished", "v"),
            Some(2),
            "t3",
        );
        assert_eq!(conditions[0].last_transition_time.as_deref(), Some("t3"));
        assert!(is_true(&conditions, "Ready"));
        remove(&mut conditions, "Ready");
        assert!(conditions.is_empty());
    }
}
