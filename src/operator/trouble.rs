//! Why an ingest's pods are not getting on, read from what the cluster
//! says about them: the scheduler's `PodScheduled` condition, the
//! kubelet's container states, and the Job controller's Events when it
//! cannot create a pod at all (a quota, an admission webhook). Without it
//! a Corpus says "Job is running" while its pod sits Pending for hours,
//! and says "BackoffLimitExceeded" where the pod said "OOMKilled".

use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

/// What stops an ingest's pods: a condition reason and a message naming
/// the pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trouble {
    pub reason: &'static str,
    pub message: String,
}

/// The Event reason of a controller that could not create a pod.
pub const FAILED_CREATE: &str = "FailedCreate";

/// The trouble of the newest pod that has one, else a pod creation that
/// failed after the newest pod was made. `pods` are a Job's pods;
/// `job_events` its Events (any order).
///
/// While some pod is still live, only live pods count: a retry that runs
/// is not held back by the pod before it that was OOMKilled. With none
/// left (between retries, or the Job failed) the finished ones tell why.
pub fn diagnose(pods: &[Pod], job_events: &[Event]) -> Option<Trouble> {
    let mut pods: Vec<&Pod> = pods.iter().collect();
    pods.sort_by_key(|p| std::cmp::Reverse(created(p)));
    let live: Vec<&Pod> = pods.iter().copied().filter(|p| !finished(p)).collect();
    let candidates = if live.is_empty() { &pods } else { &live };
    if let Some(trouble) = candidates.iter().find_map(|p| pod_trouble(p)) {
        return Some(trouble);
    }
    let newest_pod = pods.first().and_then(|p| created(p));
    job_events
        .iter()
        .filter(|e| e.reason.as_deref() == Some(FAILED_CREATE))
        .filter_map(|e| Some((event_time(e)?, e)))
        .filter(|(at, _)| newest_pod.is_none_or(|pod| *at >= pod))
        .max_by_key(|(at, _)| *at)
        .map(|(_, e)| Trouble {
            reason: "PodCreateFailed",
            message: format!(
                "Job {} cannot create its pod: {}",
                e.involved_object.name.as_deref().unwrap_or_default(),
                e.message.as_deref().unwrap_or("no message")
            ),
        })
}

/// One pod's trouble, the most telling first: a container killed for its
/// memory, one that cannot start, then a pod no node takes.
fn pod_trouble(pod: &Pod) -> Option<Trouble> {
    let name = pod.name_any();
    let status = pod.status.as_ref()?;
    let containers: Vec<&ContainerStatus> = status
        .init_container_statuses
        .iter()
        .chain(status.container_statuses.iter())
        .flatten()
        .collect();
    for c in &containers {
        let oom = [c.state.as_ref(), c.last_state.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|s| s.terminated.as_ref())
            .any(|t| t.reason.as_deref() == Some("OOMKilled"));
        if oom {
            let limit = memory_limit(pod, &c.name)
                .map(|l| format!(" of {l}"))
                .unwrap_or_default();
            return Some(Trouble {
                reason: "OOMKilled",
                message: format!(
                    "pod {name}: container {} was killed for exceeding its memory limit{limit}; \
                     raise spec.ingest.resources.limits.memory",
                    c.name
                ),
            });
        }
    }
    for c in &containers {
        let Some(waiting) = c.state.as_ref().and_then(|s| s.waiting.as_ref()) else {
            continue;
        };
        let reason = match waiting.reason.as_deref() {
            Some("ErrImagePull" | "ImagePullBackOff" | "InvalidImageName") => "ImagePullFailed",
            Some("CreateContainerConfigError" | "CreateContainerError") => "ContainerConfigInvalid",
            Some("CrashLoopBackOff") => "CrashLoopBackOff",
            _ => continue,
        };
        return Some(Trouble {
            reason,
            message: format!(
                "pod {name}: container {} is waiting ({}): {}",
                c.name,
                waiting.reason.as_deref().unwrap_or_default(),
                waiting.message.as_deref().unwrap_or("no message")
            ),
        });
    }
    let unschedulable = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .filter(|c| c.reason.as_deref() == Some("Unschedulable"));
    unschedulable.map(|c| Trouble {
        reason: "PodUnschedulable",
        message: format!(
            "pod {name} cannot be scheduled: {}",
            c.message.as_deref().unwrap_or("no message")
        ),
    })
}

fn memory_limit(pod: &Pod, container: &str) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    spec.init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .find(|c| c.name == container)?
        .resources
        .as_ref()?
        .limits
        .as_ref()?
        .get("memory")
        .map(|q| q.0.clone())
}

fn finished(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

fn created(pod: &Pod) -> Option<Timestamp> {
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

fn event_time(event: &Event) -> Option<Timestamp> {
    event
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or(event.event_time.as_ref().map(|t| t.0))
        .or(event.first_timestamp.as_ref().map(|t| t.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateTerminated, ContainerStateWaiting, PodCondition, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    fn pod(name: &str, at: &str, status: PodStatus) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                creation_timestamp: Some(Time(at.parse().unwrap())),
                ..Default::default()
            },
            spec: None,
            status: Some(status),
        }
    }

    fn container(state: ContainerState) -> ContainerStatus {
        ContainerStatus {
            name: "ingest".into(),
            state: Some(state),
            ..Default::default()
        }
    }

    fn failed_create(at: &str, message: &str) -> Event {
        Event {
            reason: Some(FAILED_CREATE.into()),
            message: Some(message.into()),
            last_timestamp: Some(Time(at.parse().unwrap())),
            involved_object: k8s_openapi::api::core::v1::ObjectReference {
                name: Some("c-ingest-1".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn live_pods_speak_before_finished_ones() {
        let oom = pod(
            "old",
            "2026-01-01T00:00:00Z",
            PodStatus {
                phase: Some("Failed".into()),
                container_statuses: Some(vec![container(ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        exit_code: 137,
                        reason: Some("OOMKilled".into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                })]),
                ..Default::default()
            },
        );
        let pulling = pod(
            "new",
            "2026-01-01T00:01:00Z",
            PodStatus {
                container_statuses: Some(vec![container(ContainerState {
                    waiting: Some(ContainerStateWaiting {
                        reason: Some("ImagePullBackOff".into()),
                        message: Some("no such image".into()),
                    }),
                    ..Default::default()
                })]),
                ..Default::default()
            },
        );
        // A live pod's trouble is the one reported; with none live, the
        // finished pod's.
        let trouble = diagnose(&[oom.clone(), pulling], &[]).unwrap();
        assert_eq!(trouble.reason, "ImagePullFailed");
        assert!(trouble.message.contains("no such image"), "{trouble:?}");
        assert_eq!(diagnose(&[oom], &[]).unwrap().reason, "OOMKilled");
    }

    #[test]
    fn unschedulable_pods_and_refused_creations_are_named() {
        let pending = pod(
            "p",
            "2026-01-01T00:00:00Z",
            PodStatus {
                phase: Some("Pending".into()),
                conditions: Some(vec![PodCondition {
                    type_: "PodScheduled".into(),
                    status: "False".into(),
                    reason: Some("Unschedulable".into()),
                    message: Some("0/3 nodes are available".into()),
                    ..Default::default()
                }]),
                ..Default::default()
            },
        );
        let trouble = diagnose(&[pending], &[]).unwrap();
        assert_eq!(trouble.reason, "PodUnschedulable");
        assert!(trouble.message.contains("0/3 nodes"), "{trouble:?}");

        let quota = failed_create("2026-01-01T00:02:00Z", "exceeded quota: q");
        let trouble = diagnose(&[], std::slice::from_ref(&quota)).unwrap();
        assert_eq!(trouble.reason, "PodCreateFailed");
        assert!(trouble.message.contains("exceeded quota"), "{trouble:?}");

        // A refusal older than the pod that was made since is history.
        let running = pod("r", "2026-01-01T00:03:00Z", PodStatus::default());
        assert_eq!(diagnose(&[running], &[quota]), None);
    }
}
