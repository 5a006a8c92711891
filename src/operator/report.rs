//! What an ingest pod tells the controller: the report ConfigMap it
//! writes (the version it published, or why it could not) and how the
//! controller reads it back for the inputs it started the ingest for.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::ingest::{IngestError, IngestReport};
use crate::spec::IndexVersionStatus;

/// The ConfigMap key holding the inputs hash an ingest ran for.
pub const REPORT_INPUTS_KEY: &str = "inputs";

/// The ConfigMap key holding the ingest's [`IndexVersionStatus`] as JSON.
pub const REPORT_STATUS_KEY: &str = "status.json";

/// Failed (and flagged) documents listed in a status (all are counted).
const MAX_LISTED: usize = 20;

/// The status an ingest reports for the version it published: counts, the
/// first failures, and what it was built from.
pub fn version_status(
    report: &IngestReport,
    inputs: &str,
    profile: &crate::spec::IndexProfileSpec,
) -> IndexVersionStatus {
    let m = &report.manifest;
    IndexVersionStatus {
        version: m.version.clone(),
        inputs: Some(inputs.to_string()),
        profile_hash: Some(m.profile_hash.clone()),
        format: Some(m.format_version),
        served_profile: None,
        secrets: profile.secret_names(),
        graph: report
            .graph
            .as_ref()
            .is_some_and(|outcome| !outcome.failed())
            .then(|| profile.graph.clone()),
        job: None,
        ingest_spec: None,
        documents: m.counts.documents as u64,
        failed_documents: m.counts.failed_documents as u64,
        flagged_documents: m.counts.flagged_documents as u64,
        lost_pages: m.counts.lost_pages as u64,
        sentences: m.counts.sentences as u64,
        chunks: m.counts.chunks as u64,
        edges: m.counts.related_edges as u64,
        skipped_entries: report.skipped.len() as u64,
        failures: listed(&m.failed),
        flagged: listed(&m.flagged),
        error: None,
        empty_attempts: 0,
        retry_at: None,
    }
}

/// The first few of a version's notes on documents, for its status.
fn listed(notes: &[crate::index::DocumentNote]) -> Vec<String> {
    notes
        .iter()
        .take(MAX_LISTED)
        .map(|n| format!("{}: {}", n.key, n.reason))
        .collect()
}

/// Reads an ingest's report ConfigMap: the status it published, when it
/// ran for `inputs`.
pub fn read_report(report: &ConfigMap, inputs: &str) -> Option<Result<IndexVersionStatus, String>> {
    let data = report.data.as_ref()?;
    if data.get(REPORT_INPUTS_KEY).map(String::as_str) != Some(inputs) {
        return None;
    }
    let json = data.get(REPORT_STATUS_KEY)?;
    Some(
        serde_json::from_str::<IndexVersionStatus>(json)
            .map(|status| IndexVersionStatus {
                inputs: Some(inputs.to_string()),
                ..status
            })
            .map_err(|e| format!("unreadable ingest report: {e}")),
    )
}

/// The ConfigMap key holding why an ingest failed outright.
pub const REPORT_ERROR_KEY: &str = "error";

/// The ConfigMap key saying what kind of failure [`REPORT_ERROR_KEY`]
/// holds, when it is one the controller treats apart
/// ([`NOTHING_INDEXED`]). A report without it (any failure of an earlier
/// release) is an ordinary failure.
pub const REPORT_ERROR_KIND_KEY: &str = "errorKind";

/// [`REPORT_ERROR_KIND_KEY`] of an ingest that found nothing to index.
pub const NOTHING_INDEXED: &str = "NothingIndexed";

/// The exit status of an ingest pod that found nothing to index. Its Job
/// fails at once on it (a pod failure policy): another pod would find the
/// same nothing, and the Corpus tries again after its own backoff.
pub const NOTHING_INDEXED_EXIT_CODE: u8 = 4;

/// Why an ingest published no version, as its pod reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngestFailure {
    pub message: String,
    /// No document gave a sentence ([`IngestError::NothingIndexed`]): the
    /// sources may yet fill (documents copied into a claim, uploaded to a
    /// bucket), which nothing the controller watches would say, so the
    /// ingest is tried again after a backoff.
    pub nothing_indexed: bool,
}

impl IngestFailure {
    /// The failure an error stands for, `message` its whole chain.
    pub fn of(error: &(dyn std::error::Error + 'static), message: String) -> Self {
        let mut cause = Some(error);
        let mut nothing_indexed = false;
        while let Some(e) = cause {
            if matches!(
                e.downcast_ref::<IngestError>(),
                Some(IngestError::NothingIndexed { .. })
            ) {
                nothing_indexed = true;
            }
            cause = e.source();
        }
        Self {
            message,
            nothing_indexed,
        }
    }
}

/// What an ingest pod writes into its report ConfigMap: the version it
/// published, or why it could not.
pub fn report_data(
    inputs: &str,
    outcome: Result<&IndexVersionStatus, &IngestFailure>,
) -> BTreeMap<String, String> {
    let mut data = BTreeMap::from([(REPORT_INPUTS_KEY.to_string(), inputs.to_string())]);
    match outcome {
        Ok(status) => {
            data.insert(
                REPORT_STATUS_KEY.into(),
                serde_json::to_string(status).unwrap_or_default(),
            );
        }
        Err(failure) => {
            data.insert(REPORT_ERROR_KEY.into(), failure.message.clone());
            if failure.nothing_indexed {
                data.insert(REPORT_ERROR_KIND_KEY.into(), NOTHING_INDEXED.into());
            }
        }
    }
    data
}

/// Writes an ingest's report into the ConfigMap `name` of `namespace`
/// (which the controller created for it). Both keys are replaced, so a
/// report never mixes two ingests.
pub async fn write_report(
    client: kube::Client,
    namespace: &str,
    name: &str,
    data: BTreeMap<String, String>,
) -> Result<(), kube::Error> {
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client, namespace);
    let mut patch = serde_json::json!({ "data": data });
    // A merge patch keeps keys it does not mention: clear the other ones.
    for key in [REPORT_STATUS_KEY, REPORT_ERROR_KEY, REPORT_ERROR_KIND_KEY] {
        if !data.contains_key(key) {
            patch["data"][key] = serde_json::Value::Null;
        }
    }
    api.patch(
        name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// Why the ingest for `inputs` failed, as its pod reported it.
pub fn report_error(report: &ConfigMap, inputs: &str) -> Option<IngestFailure> {
    let data = report.data.as_ref()?;
    if data.get(REPORT_INPUTS_KEY).map(String::as_str) != Some(inputs) {
        return None;
    }
    Some(IngestFailure {
        message: data.get(REPORT_ERROR_KEY)?.clone(),
        nothing_indexed: data.get(REPORT_ERROR_KIND_KEY).map(String::as_str)
            == Some(NOTHING_INDEXED),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_indexed_is_told_apart_through_context() {
        let error = anyhow::Error::from(IngestError::NothingIndexed {
            documents: 0,
            failed: 0,
            first: String::new(),
        })
        .context("ingesting corpus quickstart");
        let failure = IngestFailure::of(error.as_ref(), format!("{error:#}"));
        assert!(failure.nothing_indexed);
        assert!(
            failure.message.contains("nothing to index"),
            "{}",
            failure.message
        );

        let other = anyhow::anyhow!("no such directory: docs");
        assert!(!IngestFailure::of(other.as_ref(), other.to_string()).nothing_indexed);
    }

    #[test]
    fn a_report_carries_the_kind_of_its_failure() {
        let failure = IngestFailure {
            message: "nothing to index: 0 documents read, 0 failed".into(),
            nothing_indexed: true,
        };
        let report = ConfigMap {
            data: Some(report_data("abc", Err(&failure))),
            ..Default::default()
        };
        assert_eq!(report_error(&report, "abc"), Some(failure));
        assert_eq!(report_error(&report, "other inputs"), None);
        // An earlier release's report: the message alone.
        let mut data = report.data.clone().unwrap_or_default();
        data.remove(REPORT_ERROR_KIND_KEY);
        let earlier = ConfigMap {
            data: Some(data),
            ..Default::default()
        };
        assert!(!report_error(&earlier, "abc").unwrap().nothing_indexed);
    }
}
