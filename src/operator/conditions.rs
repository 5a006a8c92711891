//! Conditions in the Kubernetes convention: one entry per type, whose
//! `lastTransitionTime` moves only when its status does; and the Events
//! that announce their transitions.

use crate::spec::{Condition, CorpusStatus, RetrievalRouteStatus};

/// A status that holds conditions.
pub trait WithConditions {
    fn conditions(&self) -> &[Condition];
    fn conditions_mut(&mut self) -> &mut Vec<Condition>;
}

impl WithConditions for CorpusStatus {
    fn conditions(&self) -> &[Condition] {
        &self.conditions
    }
    fn conditions_mut(&mut self) -> &mut Vec<Condition> {
        &mut self.conditions
    }
}

impl WithConditions for RetrievalRouteStatus {
    fn conditions(&self) -> &[Condition] {
        &self.conditions
    }
    fn conditions_mut(&mut self) -> &mut Vec<Condition> {
        &mut self.conditions
    }
}

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

/// The reason of the conditions set when the API server refuses one of
/// the operator's writes (an admission policy, a quota, a name rule).
pub const APPLY_FAILED: &str = "ApplyFailed";

/// Marks a write the API server refused: `Ready=False` and
/// `Stalled=True`, reason [`APPLY_FAILED`], with `message` (which names
/// the object and quotes the server); `Reconciling` goes, as nothing is
/// under way until someone acts.
pub fn refused(conditions: &mut Vec<Condition>, message: &str, generation: Option<i64>, now: &str) {
    for (type_, status) in [("Ready", false), ("Stalled", true)] {
        set(
            conditions,
            Set::new(type_, status, APPLY_FAILED, message),
            generation,
            now,
        );
    }
    remove(conditions, "Reconciling");
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

/// Sets kstatus' abnormal-true conditions, which GitOps tools (Flux, Argo
/// CD, `kubectl wait`) read on every kind, from the kind's own: `Stalled`
/// while `Ready` is false for a reason other than work under way (an
/// invalid spec, a missing Corpus, a failed ingest, a rollout past its
/// deadline), `Reconciling` while `work` (a condition type, e.g.
/// `Ingesting`) is true. Each is present only while true, as kstatus
/// prefers.
pub fn abnormal_from_ready(
    conditions: &mut Vec<Condition>,
    work: Option<&str>,
    generation: Option<i64>,
    now: &str,
) {
    let reconciling = work
        .and_then(|work| get(conditions, work))
        .filter(|c| c.status == "True")
        .cloned();
    let stalled = get(conditions, "Ready").filter(|c| is_problem(c)).cloned();
    for (type_, cause) in [("Reconciling", reconciling), ("Stalled", stalled)] {
        match cause {
            Some(cause) => set(
                conditions,
                Set::new(type_, true, &cause.reason, cause.message),
                generation,
                now,
            ),
            None => remove(conditions, type_),
        }
    }
}

/// An Event to publish on a resource.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

impl Note {
    pub fn normal(reason: &str, message: impl Into<String>) -> Self {
        Self {
            warning: false,
            reason: reason.to_string(),
            message: message.into(),
        }
    }

    pub fn warning(reason: &str, message: impl Into<String>) -> Self {
        Self {
            warning: true,
            reason: reason.to_string(),
            message: message.into(),
        }
    }

    /// The message as an Event can carry it: the API server refuses an
    /// Event whose note is longer than [`EVENT_NOTE_LIMIT`] bytes, and a
    /// refused Event says nothing at all, so a longer message (a mount
    /// failure quoting a whole API error) is cut at a character boundary
    /// and marked. The condition keeps the whole message.
    pub fn event_text(&self) -> String {
        const MARK: &str = " …";
        if self.message.len() <= EVENT_NOTE_LIMIT {
            return self.message.clone();
        }
        let mut end = EVENT_NOTE_LIMIT - MARK.len();
        while !self.message.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}{MARK}", &self.message[..end])
    }
}

/// The longest note, in bytes, the API server accepts on an Event
/// (`events.k8s.io/v1` validation).
pub const EVENT_NOTE_LIMIT: usize = 1024;

/// Reasons of a not-yet-ready state that is on its way, not a problem.
const UNDER_WAY: &[&str] = &[
    "Ingesting",
    "WaitingForIndex",
    "Deploying",
    "NewTemplate",
    "RollingOut",
    "AwaitingReindex",
    "IngestQueued",
    "RolloutQueued",
];

/// Whether a condition in this state is a problem: `Ready`, `Valid` or
/// `Available` false, or `Degraded` true, for a reason other than work
/// under way.
fn is_problem(condition: &Condition) -> bool {
    let bad = match condition.type_.as_str() {
        "Degraded" => condition.status == "True",
        "Ready" | "Valid" | "Available" => condition.status == "False",
        _ => false,
    };
    bad && !UNDER_WAY.contains(&condition.reason.as_str())
}

/// One Event for every condition whose status or reason differs from
/// `before`, a Warning when it is a problem. A condition set for the first
/// time is announced only when it is a problem or `Paused` (a new
/// resource's first steps have Events of their own), and a reason already
/// in `notes` is not announced twice.
pub fn transitions(before: &[Condition], after: &[Condition], notes: &mut Vec<Note>) {
    for condition in after {
        let changed = match get(before, &condition.type_) {
            Some(old) => old.status != condition.status || old.reason != condition.reason,
            None => is_problem(condition) || condition.type_ == "Paused",
        };
        if !changed {
            continue;
        }
        if let Some(note) = notes.iter_mut().find(|n| n.reason == condition.reason) {
            // One Event per reason; a Warning when any condition with it
            // is a problem (`Progressing` stuck, then `Ready` false).
            note.warning |= is_problem(condition);
            continue;
        }
        let message = format!(
            "{} is {}: {}",
            condition.type_, condition.status, condition.message
        );
        notes.push(if is_problem(condition) {
            Note::warning(&condition.reason, message)
        } else {
            Note::normal(&condition.reason, message)
        });
    }
}

/// Seconds since the Unix epoch of an RFC 3339 time, as conditions and
/// status fields carry it; `None` for one that does not parse or lies
/// before the epoch.
pub fn unix_seconds(rfc3339: &str) -> Option<u64> {
    rfc3339
        .parse::<k8s_openapi::jiff::Timestamp>()
        .ok()
        .and_then(|t| u64::try_from(t.as_second()).ok())
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
    fn event_text_fits_the_api_limit_at_a_character_boundary() {
        let short = Note::warning("VolumeMountFailed", "secret \"late\" not found");
        assert_eq!(short.event_text(), short.message);
        // 'é' is two bytes, so a cut at an odd byte lands inside one.
        let long = Note::warning("VolumeMountFailed", "é".repeat(EVENT_NOTE_LIMIT));
        let text = long.event_text();
        assert!(text.len() <= EVENT_NOTE_LIMIT, "{} bytes", text.len());
        assert!(text.ends_with(" …"));
        assert!(text.starts_with("éé"));
        let exact = Note::normal("Ready", "x".repeat(EVENT_NOTE_LIMIT));
        assert_eq!(exact.event_text(), exact.message);
    }

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

    #[test]
    fn a_refused_write_stalls_with_one_warning() {
        let mut before = Vec::new();
        set(
            &mut before,
            Set::new("Ready", false, "Deploying", "rolling"),
            Some(2),
            "t1",
        );
        set(
            &mut before,
            Set::new("Reconciling", true, "Deploying", "rolling"),
            Some(2),
            "t1",
        );
        let mut after = before.clone();
        let message = "the API server refused Deployment docs-retrieval: denied by policy";
        refused(&mut after, message, Some(2), "t2");
        let ready = get(&after, "Ready").expect("Ready");
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", APPLY_FAILED)
        );
        assert_eq!(ready.message, message);
        let stalled = get(&after, "Stalled").expect("Stalled");
        assert_eq!(
            (stalled.status.as_str(), stalled.reason.as_str()),
            ("True", APPLY_FAILED)
        );
        assert!(get(&after, "Reconciling").is_none());
        let mut notes = Vec::new();
        transitions(&before, &after, &mut notes);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].warning && notes[0].reason == APPLY_FAILED,
            "{notes:?}"
        );
        assert!(notes[0].message.contains("denied by policy"), "{notes:?}");
        // Refused again, the same way: nothing new to announce.
        let mut again = after.clone();
        refused(&mut again, message, Some(2), "t3");
        let mut notes = Vec::new();
        transitions(&after, &again, &mut notes);
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn each_transition_is_announced_once_and_problems_as_warnings() {
        let mut before = Vec::new();
        set(
            &mut before,
            Set::new("Ready", true, "IndexActive", "v1"),
            Some(1),
            "t1",
        );
        set(
            &mut before,
            Set::new("Ingesting", true, "JobRunning", "job"),
            Some(1),
            "t1",
        );
        // Only the message moved: nothing to say.
        let mut after = before.clone();
        set(
            &mut after,
            Set::new("Ready", true, "IndexActive", "v1, 3 documents"),
            Some(1),
            "t2",
        );
        let mut notes = Vec::new();
        transitions(&before, &after, &mut notes);
        assert!(notes.is_empty(), "{notes:?}");

        // A failure flips two conditions for one reason: one Warning.
        for type_ in ["Ready", "Ingesting"] {
            set(
                &mut after,
                Set::new(type_, false, "IngestFailed", "Job failed"),
                Some(1),
                "t2",
            );
        }
        // A new condition is news when it is a problem.
        set(
            &mut after,
            Set::new("Degraded", true, "DocumentsFailed", "2 failed"),
            Some(1),
            "t2",
        );
        transitions(&before, &after, &mut notes);
        assert_eq!(
            notes,
            [
                Note::warning("IngestFailed", "Ready is False: Job failed"),
                Note::warning("DocumentsFailed", "Degraded is True: 2 failed"),
            ]
        );

        // A first build under way is not a problem, nor news.
        let mut first = Vec::new();
        set(
            &mut first,
            Set::new("Ready", false, "Ingesting", "building"),
            Some(1),
            "t1",
        );
        let mut notes = vec![Note::normal("IngestStarted", "job")];
        transitions(&[], &first, &mut notes);
        assert_eq!(notes.len(), 1);
        // Its end is.
        let mut ready = first.clone();
        set(
            &mut ready,
            Set::new("Ready", true, "IndexActive", "v1"),
            Some(1),
            "t2",
        );
        transitions(&first, &ready, &mut notes);
        assert_eq!(notes[1], Note::normal("IndexActive", "Ready is True: v1"));
    }
}
