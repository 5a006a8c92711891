//! Leader election on a `coordination.k8s.io/v1` Lease, so that two
//! operator replicas never reconcile at once: one holds the lease and
//! renews it; the other waits until it expires. A leader that cannot renew
//! in time stops (its process exits and restarts as a follower) rather than
//! risk acting beside a new leader.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Api;
use kube::api::PostParams;

/// What a replica should do with the lease as it stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nobody holds it, or its holder let it expire: take it.
    Acquire,
    /// We hold it: renew it.
    Renew,
    /// Someone else holds it and renews it: wait.
    Wait,
}

/// Decides from the lease's spec (none when the Lease does not exist).
pub fn decide(spec: Option<&LeaseSpec>, identity: &str, now: Timestamp) -> Decision {
    let Some(spec) = spec else {
        return Decision::Acquire;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder == identity {
        return Decision::Renew;
    }
    if holder.is_empty() {
        return Decision::Acquire;
    }
    let seconds = i64::from(spec.lease_duration_seconds.unwrap_or(15));
    let expired = spec
        .renew_time
        .as_ref()
        .or(spec.acquire_time.as_ref())
        .is_none_or(|t| t.0 + SignedDuration::from_secs(seconds) <= now);
    if expired {
        Decision::Acquire
    } else {
        Decision::Wait
    }
}

/// This process' identity on the lease: the pod's name (else
/// `trellis-operator`) and a suffix unique to the process. A container
/// restarted in the same pod is a new contender, not the old holder: it
/// waits for the lease like any other replica instead of renewing one its
/// previous incarnation held (client-go's leader election does the same).
pub fn identity(pod: Option<&str>) -> String {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let unique = blake3::hash(format!("{}-{started}", std::process::id()).as_bytes());
    format!(
        "{}_{}",
        pod.unwrap_or("trellis-operator"),
        &unique.to_hex()[..8]
    )
}

/// One replica's view of the lease.
pub struct LeaseLock {
    api: Api<Lease>,
    name: String,
    identity: String,
    duration: Duration,
}

impl LeaseLock {
    pub fn new(api: Api<Lease>, name: &str, identity: &str, duration: Duration) -> Self {
        Self {
            api,
            name: name.to_string(),
            identity: identity.to_string(),
            duration,
        }
    }

    /// Takes or renews the lease if it may; whether it holds it now.
    /// Losing a race to another replica (a conflict) is not an error.
    pub async fn try_hold(&self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let current = self.api.get_opt(&self.name).await?;
        let spec = current.as_ref().and_then(|l| l.spec.as_ref());
        let decision = decide(spec, &self.identity, now);
        if decision == Decision::Wait {
            return Ok(false);
        }
        let transitions = spec.and_then(|s| s.lease_transitions).unwrap_or(0);
        let acquired = match decision {
            Decision::Renew => spec.and_then(|s| s.acquire_time.clone()),
            _ => None,
        };
        let new_spec = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.duration.as_secs() as i32),
            acquire_time: Some(acquired.unwrap_or(MicroTime(now))),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(if decision == Decision::Acquire && current.is_some() {
                transitions + 1
            } else {
                transitions
            }),
            ..Default::default()
        };
        let result = match current {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        ..Default::default()
                    },
                    spec: Some(new_spec),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            Some(mut lease) => {
                // The resourceVersion read above makes this a
                // compare-and-swap: a replica that raced us gets a conflict.
                lease.spec = Some(new_spec);
                self.api
                    .replace(&self.name, &PostParams::default(), &lease)
                    .await
            }
        };
        match result {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the lease up, if this replica still holds it, so that another
    /// takes over at its next try instead of after the lease expires (a
    /// graceful stop: an upgrade, a drained node).
    pub async fn release(&self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            return Ok(());
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.acquire_time = None;
        spec.renew_time = None;
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            // Somebody else wrote it meanwhile: nothing left to give up.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            other => other.map(drop),
        }
    }

    /// Waits until this replica holds the lease.
    pub async fn acquire(&self) {
        let retry = (self.duration / 5).max(Duration::from_secs(1));
        loop {
            match self.try_hold().await {
                Ok(true) => return,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, lease = %self.name, "leader lease"),
            }
            tokio::time::sleep(retry).await;
        }
    }

    /// Renews the lease every third of its duration; completes when it
    /// could not be renewed within its duration (leadership lost).
    pub async fn keep(&self) {
        let every = self.duration / 3;
        let mut last = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(every).await;
            match self.try_hold().await {
                Ok(true) => last = tokio::time::Instant::now(),
                Ok(false) => {
                    tracing::error!(lease = %self.name, "another replica took the leader lease");
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, lease = %self.name, "renewing the leader lease")
                }
            }
            if last.elapsed() >= self.duration {
                tracing::error!(lease = %self.name, "leader lease not renewed in time");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: &str, renewed: Timestamp) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(renewed)),
            ..Default::default()
        }
    }

    #[test]
    fn a_restarted_process_is_a_new_contender() {
        let first = identity(Some("trellis-0"));
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = identity(Some("trellis-0"));
        assert!(first.starts_with("trellis-0_"), "{first}");
        assert_ne!(first, second);
        let now = Timestamp::now();
        let held = spec(&first, now - SignedDuration::from_secs(5));
        assert_eq!(decide(Some(&held), &second, now), Decision::Wait);
    }

    #[test]
    fn a_live_lease_of_another_replica_is_respected() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        assert_eq!(decide(None, "a", now), Decision::Acquire);
        let recent = now - SignedDuration::from_secs(5);
        assert_eq!(decide(Some(&spec("b", recent)), "a", now), Decision::Wait);
        assert_eq!(decide(Some(&spec("a", recent)), "a", now), Decision::Renew);
        let stale = now - SignedDuration::from_secs(16);
        assert_eq!(decide(Some(&spec("b", stale)), "a", now), Decision::Acquire);
        assert_eq!(decide(Some(&spec("", recent)), "a", now), Decision::Acquire);
    }
}
