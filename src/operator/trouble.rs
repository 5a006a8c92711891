//! Why an ingest's pods are not getting on, read from what the cluster
//! says about them: the scheduler's `PodScheduled` condition, the
//! kubelet's container states, and the Job controller's Events when it
//! cannot create a pod at all (a quota, an admission webhook), and the
//! attach/detach controller's and kubelet's Events when a scheduled pod's
//! volumes cannot be attached or mounted (a `ReadWriteOnce` claim held on
//! another node: "Multi-Attach error"; a missing Secret). Without it a
//! Corpus says "Job is running" while its pod sits Pending for hours, and
//! says "BackoffLimitExceeded" where the pod said "OOMKilled".

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
/// The Event reason of the attach/detach controller that could not attach
/// a pod's volume to its node.
pub const FAILED_ATTACH: &str = "FailedAttachVolume";
/// The Event reason of a kubelet that could not mount a pod's volume.
pub const FAILED_MOUNT: &str = "FailedMount";

/// Whether `pod` waits on its node for its volumes, so that its Events
/// may say why: scheduled, still `Pending`, not finished.
pub fn awaits_volumes(pod: &Pod) -> bool {
    let Some(status) = pod.status.as_ref() else {
        return false;
    };
    let scheduled = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "PodScheduled" && c.status == "True");
    scheduled && status.phase.as_deref() == Some("Pending")
}

/// The trouble of the newest pod that has one, else a pod creation that
/// failed after the newest pod was made. `pods` are a Job's pods;
/// `job_events` its Events and `pod_events` those of its pods (any order;
/// only the reasons named above are read).
///
/// While some pod is still live, only live pods count: a retry that runs
/// is not held back by the pod before it that was OOMKilled. With none
/// left (between retries, or the Job failed) the finished ones tell why.
pub fn diagnose(pods: &[Pod], job_events: &[Event], pod_events: &[Event]) -> Option<Trouble> {
    let mut pods: Vec<&Pod> = pods.iter().collect();
    pods.sort_by_key(|p| std::cmp::Reverse(created(p)));
    let live: Vec<&Pod> = pods.iter().copied().filter(|p| !finished(p)).collect();
    let candidates = if live.is_empty() { &pods } else { &live };
    if let Some(trouble) = candidates.iter().find_map(|p| pod_trouble(p, pod_events)) {
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
/// memory, one that cannot start, a volume its node cannot give it, then
/// a pod no node takes.
fn pod_trouble(pod: &Pod, pod_events: &[Event]) -> Option<Trouble> {
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
    if let Some(trouble) = volume_trouble(pod, pod_events) {
        return Some(trouble);
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

/// The newest attach or mount failure of a pod that still waits for its
/// volumes. Older Events of a pod that has since started are history.
fn volume_trouble(pod: &Pod, pod_events: &[Event]) -> Option<Trouble> {
    if !awaits_volumes(pod) {
        return None;
    }
    let name = pod.name_any();
    let uid = pod.metadata.uid.as_deref();
    let troubles: Vec<(Timestamp, &Event)> = pod_events
        .iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name.as_str()))
        // An Event of an earlier pod of the same name is not this one's.
        .filter(|e| {
            uid.is_none()
                || e.involved_object.uid.is_none()
                || e.involved_object.uid.as_deref() == uid
        })
        .filter(|e| matches!(e.reason.as_deref(), Some(FAILED_ATTACH | FAILED_MOUNT)))
        .filter_map(|e| Some((event_time(e)?, e)))
        .collect();
    let newest = troubles.iter().map(|(at, _)| *at).max()?;
    // Event times have a resolution of one second, and a kubelet's first
    // attempts can fail twice within one (a volume not yet authorised,
    // then the real cause): every newest Event speaks. Retries refresh
    // the lasting cause's time, so the message settles on it.
    let newest: Vec<&Event> = troubles
        .into_iter()
        .filter(|(at, _)| *at == newest)
        .map(|(_, e)| e)
        .collect();
    // A volume that cannot attach cannot mount either: attaching speaks
    // first.
    let attach = newest
        .iter()
        .any(|e| e.reason.as_deref() == Some(FAILED_ATTACH));
    let reason = if attach { FAILED_ATTACH } else { FAILED_MOUNT };
    let mut said: Vec<&str> = newest
        .iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .map(|e| e.message.as_deref().unwrap_or("no message"))
        .collect();
    said.sort_unstable();
    said.dedup();
    let said = said.join("; ");
    Some(if attach {
        let hint = if said.contains("Multi-Attach") {
            "; a ReadWriteOnce volume attaches to one node at a time: stop what holds it \
             elsewhere, or use a ReadWriteMany claim"
        } else {
            ""
        };
        Trouble {
            reason: "VolumeAttachFailed",
            message: format!("pod {name} cannot attach a volume: {said}{hint}"),
        }
    } else {
        Trouble {
            reason: "VolumeMountFailed",
            message: format!("pod {name} cannot mount a volume: {said}"),
        }
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

    /// An Event about `object` (a Job or a pod).
    fn event(reason: &str, object: &str, at: &str, message: &str) -> Event {
        Event {
            reason: Some(reason.into()),
            message: Some(message.into()),
            last_timestamp: Some(Time(at.parse().unwrap())),
            involved_object: k8s_openapi::api::core::v1::ObjectReference {
                name: Some(object.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn failed_create(at: &str, message: &str) -> Event {
        event(FAILED_CREATE, "c-ingest-1", at, message)
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
        let trouble = diagnose(&[oom.clone(), pulling], &[], &[]).unwrap();
        assert_eq!(trouble.reason, "ImagePullFailed");
        assert!(trouble.message.contains("no such image"), "{trouble:?}");
        assert_eq!(diagnose(&[oom], &[], &[]).unwrap().reason, "OOMKilled");
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
        let trouble = diagnose(&[pending], &[], &[]).unwrap();
        assert_eq!(trouble.reason, "PodUnschedulable");
        assert!(trouble.message.contains("0/3 nodes"), "{trouble:?}");

        let quota = failed_create("2026-01-01T00:02:00Z", "exceeded quota: q");
        let trouble = diagnose(&[], std::slice::from_ref(&quota), &[]).unwrap();
        assert_eq!(trouble.reason, "PodCreateFailed");
        assert!(trouble.message.contains("exceeded quota"), "{trouble:?}");

        // A refusal older than the pod that was made since is history.
        let running = pod("r", "2026-01-01T00:03:00Z", PodStatus::default());
        assert_eq!(diagnose(&[running], &[quota], &[]), None);
    }

    fn scheduled(phase: &str) -> PodStatus {
        PodStatus {
            phase: Some(phase.into()),
            conditions: Some(vec![PodCondition {
                type_: "PodScheduled".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            container_statuses: Some(vec![container(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some("ContainerCreating".into()),
                    message: None,
                }),
                ..Default::default()
            })]),
            ..Default::default()
        }
    }

    #[test]
    fn volumes_a_node_cannot_give_are_named() {
        let waiting = pod("w", "2026-01-01T00:00:00Z", scheduled("Pending"));
        let multi_attach = event(
            FAILED_ATTACH,
            "w",
            "2026-01-01T00:01:00Z",
            "Multi-Attach error for volume \"pvc-1\" Volume is already used by pod(s) other-0",
        );
        let trouble = diagnose(std::slice::from_ref(&waiting), &[], &[multi_attach]).unwrap();
        assert_eq!(trouble.reason, "VolumeAttachFailed");
        assert!(
            trouble.message.contains("Multi-Attach error"),
            "{trouble:?}"
        );
        assert!(trouble.message.contains("ReadWriteOnce"), "{trouble:?}");

        // The newest Event speaks; another pod's does not.
        let mounts = [
            event(
                FAILED_MOUNT,
                "w",
                "2026-01-01T00:02:00Z",
                "secret \"key\" not found",
            ),
            event(FAILED_MOUNT, "w", "2026-01-01T00:01:00Z", "older"),
            event(FAILED_MOUNT, "x", "2026-01-01T00:03:00Z", "another pod's"),
        ];
        let trouble = diagnose(std::slice::from_ref(&waiting), &[], &mounts).unwrap();
        assert_eq!(trouble.reason, "VolumeMountFailed");
        assert!(
            trouble.message.contains("secret \"key\" not found"),
            "{trouble:?}"
        );
        assert!(!trouble.message.contains("older"), "{trouble:?}");

        // Two within the same second (the resolution of Event times) both
        // speak, in whichever order they were listed.
        let transient = event(
            FAILED_MOUNT,
            "w",
            "2026-01-01T00:02:00Z",
            "not authorized to read the claim yet",
        );
        for tied in [
            [mounts[0].clone(), transient.clone()],
            [transient.clone(), mounts[0].clone()],
        ] {
            let trouble = diagnose(std::slice::from_ref(&waiting), &[], &tied).unwrap();
            assert_eq!(
                trouble.message,
                "pod w cannot mount a volume: not authorized to read the claim yet; \
                 secret \"key\" not found"
            );
        }

        // A pod that has started is past its volumes' troubles.
        let running = pod("w", "2026-01-01T00:00:00Z", scheduled("Running"));
        assert_eq!(diagnose(&[running], &[], &mounts), None);
    }
}
