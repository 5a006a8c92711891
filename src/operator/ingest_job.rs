//! The objects of one ingest: the pods' ServiceAccount and Role, the
//! report ConfigMap, the rendered manifests and the Job (or, sharded, the
//! shard and finalize Jobs) running `trellis ingest`.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{
    Job, JobSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, EnvVar, PersistentVolumeClaimVolumeSource,
    PodSpec, PodTemplateSpec, ServiceAccount, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicySpec};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::ResourceExt;

use super::pod::{
    DataAccess, container_security, mount, mount_secrets, pod_field, pod_security, pod_volumes,
    saturating_i32,
};
use super::{
    CONTENT_LABEL, CORPUS_LABEL, Error, INGEST_SPEC_LABEL, INPUTS_LABEL, MAX_JOB_NAME, Settings,
    common_labels, object_name, object_name_within, paths, short_hash,
};
use crate::locations;
use crate::spec::{Corpus, IndexProfile};

/// The ingest pods' one container.
const INGEST_CONTAINER: &str = "ingest";

/// An object the plan wants applied.
#[derive(Clone, Debug)]
pub enum Desired {
    ServiceAccount(ServiceAccount),
    Role(Role),
    RoleBinding(RoleBinding),
    ConfigMap(ConfigMap),
    NetworkPolicy(NetworkPolicy),
    /// Boxed: a Job is several times the size of the other objects.
    Job(Box<Job>),
}

/// The names of a Corpus' ingest objects for some inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Names {
    pub ingest_job: String,
    pub finalize_job: String,
    pub inputs_config: String,
    pub report: String,
    pub service_account: String,
}

impl Names {
    /// The names of the attempt at `inputs` with the Corpus' `spec.ingest`
    /// as it is now: a new `spec.ingest` is a new Job, not an edit of one
    /// (a Job's pod template cannot change).
    pub fn new(corpus: &Corpus, inputs: &str) -> Self {
        let attempt = short_hash(&[inputs.as_bytes(), ingest_spec_hash(corpus).as_bytes()]);
        let short = &attempt[..8];
        let corpus = corpus.name_any();
        let corpus = corpus.as_str();
        Self {
            ingest_job: object_name_within(corpus, &format!("ingest-{short}"), MAX_JOB_NAME),
            finalize_job: object_name_within(corpus, &format!("finalize-{short}"), MAX_JOB_NAME),
            inputs_config: object_name(corpus, &format!("inputs-{short}")),
            report: object_name(corpus, "ingest-report"),
            service_account: object_name(corpus, "ingest"),
        }
    }
}

/// The hash of a Corpus' `spec.ingest`: how its ingest pods run, which
/// [`content_hash`] leaves out. A failed ingest runs again when it
/// changes.
pub fn ingest_spec_hash(corpus: &Corpus) -> String {
    short_hash(&[serde_json::to_string(&corpus.spec.ingest)
        .unwrap_or_default()
        .as_bytes()])
}

/// The ConfigMaps the Corpus' `configMap` sources name.
pub fn source_config_map_names(corpus: &Corpus) -> Vec<String> {
    let mut names: Vec<String> = corpus
        .spec
        .sources
        .iter()
        .filter_map(|s| s.config_map.as_ref().map(|c| c.name.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The manifests an ingest pod reads: the profile and the corpus, as the
/// embedded mode would read them from files.
pub fn render_manifests(corpus: &Corpus, profile: &IndexProfile) -> Result<String, Error> {
    let profile_doc = serde_json::json!({
        "apiVersion": crate::spec::API_VERSION,
        "kind": "IndexProfile",
        "metadata": {"name": profile.name_any()},
        "spec": profile.spec,
    });
    let corpus_doc = serde_json::json!({
        "apiVersion": crate::spec::API_VERSION,
        "kind": "Corpus",
        "metadata": {"name": corpus.name_any()},
        "spec": corpus.spec,
    });
    let render =
        |v: &serde_json::Value| serde_yaml::to_string(v).map_err(|e| Error::Render(e.to_string()));
    Ok(format!(
        "{}---\n{}",
        render(&profile_doc)?,
        render(&corpus_doc)?
    ))
}

/// The labels of a Corpus' ingest objects; with `inputs`, those of one
/// attempt (its Jobs and rendered manifests).
fn labels(corpus: &Corpus, inputs: Option<&str>) -> BTreeMap<String, String> {
    let mut labels = common_labels("ingest");
    labels.insert(CORPUS_LABEL.into(), super::label_value(&corpus.name_any()));
    if let Some(inputs) = inputs {
        labels.insert(INPUTS_LABEL.into(), inputs.into());
        labels.insert(INGEST_SPEC_LABEL.into(), ingest_spec_hash(corpus));
    }
    labels
}

fn meta(
    name: &str,
    namespace: Option<String>,
    labels: BTreeMap<String, String>,
    owner: &OwnerReference,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace,
        labels: Some(labels),
        owner_references: Some(vec![owner.clone()]),
        ..Default::default()
    }
}

/// Everything a new ingest needs, in the order to apply it: the ingest
/// pods' ServiceAccount and the Role that lets them write their report
/// ConfigMap and nothing else, the report ConfigMap itself (metadata only:
/// its data belongs to the pods), the rendered manifests, and the Job.
///
/// `keep` names the versions the ingest must not remove when it applies
/// `retainVersions`: those routes serve or are rolling to.
pub fn ingest_objects(
    corpus: &Corpus,
    profile: &IndexProfile,
    inputs: &str,
    content: &str,
    names: &Names,
    settings: &Settings,
    keep: &[String],
) -> Result<Vec<Desired>, Error> {
    let name = corpus.name_any();
    let ns = corpus.namespace();
    let owner = super::owner_reference(corpus)?;
    let base = labels(corpus, None);
    let account_meta = || meta(&names.service_account, ns.clone(), base.clone(), &owner);
    let report = ConfigMap {
        metadata: meta(&names.report, ns.clone(), base.clone(), &owner),
        ..Default::default()
    };
    let manifests = ConfigMap {
        metadata: meta(
            &names.inputs_config,
            ns.clone(),
            labels(corpus, Some(inputs)),
            &owner,
        ),
        data: Some(BTreeMap::from([(
            "manifests.yaml".to_string(),
            render_manifests(corpus, profile)?,
        )])),
        immutable: Some(true),
        ..Default::default()
    };
    let shards = corpus.spec.ingest.shards.max(1);
    let mut args = ingest_args(&name, &names.report, inputs, keep);
    if shards > 1 {
        args.extend([
            "--shard".into(),
            format!("$(JOB_COMPLETION_INDEX)/{shards}"),
        ]);
    }
    let fence = settings
        .ingest_network_policy
        .then(|| network_policy(corpus, account_meta()));
    let pods = IngestPods {
        corpus,
        profile,
        inputs,
        content,
        names,
        settings,
    };
    let mut objects = vec![
        Desired::ServiceAccount(service_account(corpus, account_meta())),
        Desired::Role(role(names, account_meta())),
        Desired::RoleBinding(role_binding(names, ns.clone(), account_meta())),
        Desired::ConfigMap(report),
        Desired::ConfigMap(manifests),
    ];
    // Before the Job: its pods start fenced.
    objects.extend(fence.map(Desired::NetworkPolicy));
    objects.push(Desired::Job(Box::new(pods.job(
        &names.ingest_job,
        args,
        shards,
        owner,
    ))));
    Ok(objects)
}

/// The ServiceAccount the ingest pods run as, with the cloud identity the
/// Corpus' template gives it.
fn service_account(corpus: &Corpus, metadata: ObjectMeta) -> ServiceAccount {
    let mut account = ServiceAccount {
        metadata,
        automount_service_account_token: Some(true),
        ..Default::default()
    };
    if let Some(identity) = &corpus.spec.ingest.template.service_account {
        account.metadata.annotations = Some(identity.annotations.clone()).filter(|a| !a.is_empty());
    }
    account
}

/// The ingest pods may write their report ConfigMap, and nothing else.
fn role(names: &Names, metadata: ObjectMeta) -> Role {
    Role {
        metadata,
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".into()]),
            resource_names: Some(vec![names.report.clone()]),
            verbs: vec!["get".into(), "patch".into(), "update".into()],
            ..Default::default()
        }]),
    }
}

/// Binds [`role`] to the ingest pods' ServiceAccount.
fn role_binding(names: &Names, namespace: Option<String>, metadata: ObjectMeta) -> RoleBinding {
    RoleBinding {
        metadata,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: names.service_account.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: names.service_account.clone(),
            namespace,
            ..Default::default()
        }]),
    }
}

/// The ingest pods' NetworkPolicy: nothing in (they serve nothing); out,
/// anywhere but link-local addresses, so a pod that a hostile document
/// took over cannot ask the cloud's metadata service for the node's
/// credentials. A Corpus with an `s3` source on ambient credentials may
/// need that service (an instance role), and gets egress anywhere.
fn network_policy(corpus: &Corpus, metadata: ObjectMeta) -> NetworkPolicy {
    let ambient = corpus
        .spec
        .sources
        .iter()
        .any(|s| s.s3.as_ref().is_some_and(|s3| s3.ambient_credentials));
    NetworkPolicy {
        metadata,
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(labels(corpus, None)),
                ..Default::default()
            }),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: Some(Vec::new()),
            egress: Some(if ambient {
                vec![NetworkPolicyEgressRule::default()]
            } else {
                super::pod::egress_but_link_local()
            }),
        }),
    }
}

fn ingest_args(corpus: &str, report: &str, inputs: &str, keep: &[String]) -> Vec<String> {
    let mut args: Vec<String> = [
        "ingest",
        "-f",
        paths::MANIFESTS,
        "--corpus",
        corpus,
        "--data-dir",
        paths::DATA,
        "--report-configmap",
        report,
        "--inputs",
        inputs,
        "--log-format",
        "json",
    ]
    .map(String::from)
    .to_vec();
    for version in keep {
        args.extend(["--keep-version".to_string(), version.clone()]);
    }
    args
}

/// The single-pod Job that builds and publishes a sharded ingest's version
/// from the vectors its shards cached.
// The finalize Job needs what the ingest Job needs, and its own name.
#[allow(clippy::too_many_arguments)]
pub fn finalize_job(
    corpus: &Corpus,
    profile: &IndexProfile,
    inputs: &str,
    content: &str,
    names: &Names,
    settings: &Settings,
    owner: OwnerReference,
    keep: &[String],
) -> Job {
    let args = ingest_args(&corpus.name_any(), &names.report, inputs, keep);
    let pods = IngestPods {
        corpus,
        profile,
        inputs,
        content,
        names,
        settings,
    };
    pods.job(&names.finalize_job, args, 1, owner)
}

/// What the pods of an attempt's Jobs are made from.
struct IngestPods<'a> {
    corpus: &'a Corpus,
    profile: &'a IndexProfile,
    inputs: &'a str,
    content: &'a str,
    names: &'a Names,
    settings: &'a Settings,
}

impl IngestPods<'_> {
    /// The Indexed Job `job_name` of `completions` pods running
    /// `trellis ingest` with `args`.
    fn job(
        &self,
        job_name: &str,
        args: Vec<String>,
        completions: u32,
        owner: OwnerReference,
    ) -> Job {
        let (corpus, settings) = (self.corpus, self.settings);
        let spec = &corpus.spec.ingest;
        let mut labels = labels(corpus, Some(self.inputs));
        labels.insert(CONTENT_LABEL.into(), self.content.into());
        let mut template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(labels.clone()),
                ..Default::default()
            }),
            spec: Some(self.pod(args)),
        };
        super::template::apply(&spec.template, settings, &mut template);
        Job {
            metadata: meta(job_name, corpus.namespace(), labels, &owner),
            spec: Some(JobSpec {
                completion_mode: Some("Indexed".into()),
                completions: Some(saturating_i32(completions)),
                parallelism: Some(saturating_i32(
                    spec.parallelism
                        .unwrap_or(completions)
                        .clamp(1, completions),
                )),
                backoff_limit: Some(saturating_i32(spec.backoff_limit)),
                active_deadline_seconds: Some(i64::from(spec.active_deadline_seconds)),
                ttl_seconds_after_finished: Some(saturating_i32(spec.ttl_seconds_after_finished)),
                pod_failure_policy: Some(pod_failure_policy()),
                template,
                ..Default::default()
            }),
            status: None,
        }
    }

    /// The ingest pod: never restarted in place (the Job makes a new one),
    /// running as the attempt's ServiceAccount.
    fn pod(&self, args: Vec<String>) -> PodSpec {
        let (volumes, mounts) = self.volumes();
        PodSpec {
            restart_policy: Some("Never".into()),
            service_account_name: Some(self.names.service_account.clone()),
            security_context: Some(pod_security()),
            containers: vec![self.container(args, mounts)],
            volumes: Some(volumes),
            ..Default::default()
        }
    }

    /// What the ingest pods mount: the data claim, the manifests, each
    /// source claim read-only, and each source ConfigMap, S3 credential
    /// Secret and graph store password in its own directory.
    fn volumes(&self) -> (Vec<Volume>, Vec<VolumeMount>) {
        let corpus = self.corpus;
        let (mut volumes, mut mounts) = pod_volumes(
            &corpus.spec.storage.claim_name,
            &corpus.name_any(),
            DataAccess::Ingest,
            &self.names.inputs_config,
        );
        let mut claims: Vec<&str> = corpus
            .spec
            .sources
            .iter()
            .filter_map(|s| s.pvc.as_ref().map(|p| p.claim_name.as_str()))
            .collect();
        claims.sort_unstable();
        claims.dedup();
        for (i, claim) in claims.into_iter().enumerate() {
            let volume = format!("source-{i}");
            volumes.push(Volume {
                name: volume.clone(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim.to_string(),
                    read_only: Some(true),
                }),
                ..Default::default()
            });
            mounts.push(mount(
                &volume,
                &format!("{}/{claim}", paths::PVC_ROOT),
                true,
            ));
        }
        // Source ConfigMaps, S3 credentials and the graph store's password,
        // each in its own directory. Optional: a missing one fails the
        // ingest (or, for the graph store, its export) with a message
        // naming it, where a required volume would leave the pod pending in
        // silence.
        for (i, config_map) in source_config_map_names(corpus).iter().enumerate() {
            let volume = format!("configmap-{i}");
            volumes.push(Volume {
                name: volume.clone(),
                config_map: Some(ConfigMapVolumeSource {
                    name: config_map.clone(),
                    optional: Some(true),
                    ..Default::default()
                }),
                ..Default::default()
            });
            mounts.push(mount(
                &volume,
                &format!("{}/{config_map}", paths::CONFIG_MAP_ROOT),
                true,
            ));
        }
        let profile_secrets = self.profile.spec.secret_names();
        let mut secrets: Vec<&str> = corpus
            .spec
            .sources
            .iter()
            .filter_map(|s| s.s3.as_ref()?.credentials_secret.as_ref())
            .map(|r| r.name.as_str())
            .chain(profile_secrets.iter().map(String::as_str))
            .collect();
        secrets.sort_unstable();
        secrets.dedup();
        mount_secrets(&secrets, &mut volumes, &mut mounts);
        (volumes, mounts)
    }

    /// The `ingest` container: hardened, told where the sources are
    /// mounted, with the Corpus' resources (else the chart's).
    fn container(&self, args: Vec<String>, mounts: Vec<VolumeMount>) -> Container {
        let settings = self.settings;
        let env_path = |name: &str, value: &str| EnvVar {
            name: name.into(),
            value: Some(value.into()),
            ..Default::default()
        };
        Container {
            name: INGEST_CONTAINER.into(),
            image: Some(settings.image.clone()),
            image_pull_policy: Some(settings.image_pull_policy.clone()),
            args: Some(args),
            env: Some(vec![
                env_path(locations::PVC_ROOT_ENV, paths::PVC_ROOT),
                env_path(locations::CONFIG_MAP_ROOT_ENV, paths::CONFIG_MAP_ROOT),
                env_path(locations::SECRET_ROOT_ENV, paths::SECRET_ROOT),
                pod_field("POD_NAMESPACE", "metadata.namespace"),
                // Names the files this pod writes on the shared claim (build
                // directories, shard vectors): every container is PID 1.
                pod_field(crate::index::writer::POD_UID_ENV, "metadata.uid"),
            ]),
            resources: Some(
                self.corpus
                    .spec
                    .ingest
                    .resources
                    .clone()
                    .unwrap_or_else(|| settings.ingest_resources.clone()),
            ),
            volume_mounts: Some(mounts),
            security_context: Some(container_security()),
            ..Default::default()
        }
    }
}

/// A pod evicted or preempted (a node drain, a higher priority) did not
/// fail: it does not use up the backoff limit. One that found nothing to
/// index fails the Job at once: its Corpus retries with a backoff of its
/// own.
fn pod_failure_policy() -> PodFailurePolicy {
    PodFailurePolicy {
        rules: vec![
            PodFailurePolicyRule {
                action: "Ignore".into(),
                on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                    type_: "DisruptionTarget".into(),
                    status: "True".into(),
                }]),
                on_exit_codes: None,
            },
            PodFailurePolicyRule {
                action: "FailJob".into(),
                on_pod_conditions: None,
                on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                    container_name: Some(INGEST_CONTAINER.into()),
                    operator: "In".into(),
                    values: vec![i32::from(super::report::NOTHING_INDEXED_EXIT_CODE)],
                }),
            },
        ],
    }
}
