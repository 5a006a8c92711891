//! The RetrievalRoute reconciler's pure half: the Deployment running
//! `trellis serve` over the Corpus' active index version, the ConfigMap it
//! reads, its Service and PodDisruptionBudget, and the route's status
//! computed from the Deployment.
//!
//! Pods are pinned to a version (`--index-version`) and load the embedder
//! that version was built with, so a profile change never reaches running
//! pods before its index does. The pod template carries the index version and the hash of the rendered
//! configuration, so a new version or a route change rolls the pods
//! (surge first: old pods serve until new ones are ready), while nothing
//! else does. The rendered configuration is an immutable ConfigMap named
//! by its hash, so a pod of the old ReplicaSet that restarts mid-rollout
//! still reads the configuration it was made for.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ContainerPort, EnvVar, HTTPGetAction, PodSpec, PodTemplateSpec, Probe,
    SecretVolumeSource, Service, ServicePort, ServiceSpec, Volume,
};
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer,
    NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;

use super::conditions::{self, Note, Set};
use super::ingest::{
    DataAccess, container_security, mount, mount_secrets, pod_security, pod_volumes,
};
use super::{
    CONFIG_HASH_ANNOTATION, CORPUS_LABEL, Error, INDEX_VERSION_ANNOTATION, ROUTE_LABEL,
    SECRETS_ANNOTATION, Settings, common_labels, object_name, paths, short_hash,
};
use crate::spec::{Corpus, IndexVersionStatus, RetrievalRoute, RetrievalRouteStatus};

/// The port `trellis serve` listens on inside the pod.
const CONTAINER_PORT: i32 = 8080;

/// What the controller observed around a route.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    pub corpus: Option<Corpus>,
    /// Why the Corpus, which exists, cannot be read (see
    /// [`super::checked`]).
    pub corpus_unreadable: Option<String>,
    pub deployment: Option<Deployment>,
    /// The resource version of every Secret the route's pods read (see
    /// [`secret_names`]); empty when it does not exist.
    pub secret_versions: BTreeMap<String, String>,
    /// The Corpus' data claim, if it exists: where the pods may run.
    pub data_claim: Option<k8s_openapi::api::core::v1::PersistentVolumeClaim>,
}

/// The objects a route runs on.
#[derive(Clone, Debug)]
pub struct Objects {
    pub config: ConfigMap,
    pub deployment: Deployment,
    pub service: Service,
    /// Only with two replicas or more: a budget over one pod would block
    /// every node drain.
    pub budget: Option<PodDisruptionBudget>,
    /// Only when the operator is told to guard retrieval pods.
    pub network_policy: Option<NetworkPolicy>,
}

/// What to do for a route.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Objects to apply, if the route can be served now.
    pub objects: Option<Objects>,
    pub status: RetrievalRouteStatus,
    /// Remove the configuration ConfigMaps other than the current one (no
    /// pod reads them any more).
    pub prune_configs: Option<String>,
    /// Events: the served version changed, conditions changed.
    pub events: Vec<Note>,
}

/// The names of a route's objects.
pub fn workload_name(route: &str) -> String {
    object_name(route, "retrieval")
}

/// The labels selecting a route's pods.
fn selector(route: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "trellis".to_string()),
        (ROUTE_LABEL.to_string(), super::label_value(route)),
    ])
}

/// The manifest a retrieval pod reads: the route alone. The embedder
/// comes from the index version itself (the profile it was built with),
/// so pods serving an older version after a profile change still embed
/// queries with that version's model.
pub fn render_manifest(route: &RetrievalRoute) -> Result<String, Error> {
    let route_doc = serde_json::json!({
        "apiVersion": crate::spec::API_VERSION,
        "kind": "RetrievalRoute",
        "metadata": {"name": route.name_any()},
        "spec": route.spec,
    });
    serde_yaml::to_string(&route_doc).map_err(|e| Error::Render(e.to_string()))
}

/// The Secrets a pod reads: volumes (projected ones too), `env` and
/// `envFrom`, of every container. Sorted, without repeats.
pub fn referenced_secrets(pod: &PodSpec) -> Vec<String> {
    let volumes = pod.volumes.iter().flatten().flat_map(|v| {
        let direct = v.secret.as_ref().and_then(|s| s.secret_name.clone());
        let projected = v
            .projected
            .iter()
            .flat_map(|p| p.sources.iter().flatten())
            .filter_map(|s| s.secret.as_ref().map(|s| s.name.clone()));
        direct.into_iter().chain(projected)
    });
    let containers = pod
        .init_containers
        .iter()
        .flatten()
        .chain(pod.containers.iter());
    let env = containers.flat_map(|c| {
        let values = c
            .env
            .iter()
            .flatten()
            .filter_map(|e| e.value_from.as_ref()?.secret_key_ref.as_ref())
            .map(|r| r.name.clone());
        let from = c
            .env_from
            .iter()
            .flatten()
            .filter_map(|e| e.secret_ref.as_ref())
            .map(|r| r.name.clone());
        values.chain(from)
    });
    let mut names: Vec<String> = volumes.chain(env).filter(|n| !n.is_empty()).collect();
    names.sort();
    names.dedup();
    names
}

/// The Secrets a route's pods would read serving the Corpus' active
/// version: the ones whose resource versions [`route_objects`] stamps.
pub fn secret_names(route: &RetrievalRoute, corpus: &Corpus, settings: &Settings) -> Vec<String> {
    let Some(active) = corpus.status.as_ref().and_then(|s| s.active_index.as_ref()) else {
        return Vec::new();
    };
    route_objects(route, corpus, active, settings, &BTreeMap::new())
        .ok()
        .and_then(|o| o.deployment.spec?.template.spec)
        .map(|pod| referenced_secrets(&pod))
        .unwrap_or_default()
}

/// Why this build cannot serve the Corpus' active version, if it cannot:
/// its format is outside [`crate::index::READABLE_FORMATS`], or unknown
/// (an earlier release built it and did not say; the re-ingest a new
/// release starts reports it).
fn unreadable_format(active: &IndexVersionStatus) -> Option<String> {
    let formats = &crate::index::READABLE_FORMATS;
    let built = match active.format {
        Some(format) if formats.contains(&format) => return None,
        Some(format) => format!("was written in index format {format}"),
        None => "was built by an earlier release, which did not report its format".to_string(),
    };
    Some(format!(
        "index version {} {built}; this operator's pods read formats {}–{}, so the \
         route's pods keep serving it as they are until the Corpus publishes a version \
         this release builds",
        active.version,
        formats.start(),
        formats.end()
    ))
}

/// Builds the route's objects serving `active`, the Corpus' active
/// version: its pods mount the Secrets that version's profile reads.
///
/// `secret_versions` stamps the pod template: a rotated Secret (a new
/// token, a new API key) changes the stamp and so rolls the pods, which
/// read Secrets only when they start.
pub fn route_objects(
    route: &RetrievalRoute,
    corpus: &Corpus,
    active: &IndexVersionStatus,
    settings: &Settings,
    secret_versions: &BTreeMap<String, String>,
) -> Result<Objects, Error> {
    let version = active.version.as_str();
    let name = route.name_any();
    let ns = route.namespace();
    let owner = super::owner_reference(route)?;
    let serving = &route.spec.serving;
    let mut labels = common_labels("retrieval");
    labels.insert(ROUTE_LABEL.into(), super::label_value(&name));
    labels.insert(CORPUS_LABEL.into(), super::label_value(&corpus.name_any()));
    let meta = |object_name: String, labels: BTreeMap<String, String>| ObjectMeta {
        name: Some(object_name),
        namespace: ns.clone(),
        labels: Some(labels),
        owner_references: Some(vec![owner.clone()]),
        ..Default::default()
    };

    let manifests = render_manifest(route)?;
    let config_hash = short_hash(&[manifests.as_bytes()]);
    let config_name = object_name(&name, &format!("config-{}", &config_hash[..8]));
    let mut config_labels = labels.clone();
    config_labels.insert(CONFIG_HASH_ANNOTATION.into(), config_hash.clone());
    let config = ConfigMap {
        metadata: meta(config_name.clone(), config_labels),
        data: Some(BTreeMap::from([("route.yaml".to_string(), manifests)])),
        immutable: Some(true),
        ..Default::default()
    };

    let workload = workload_name(&name);
    let mut args = [
        "serve",
        "-f",
        paths::MANIFESTS,
        "--route",
        &name,
        "--data-dir",
        paths::DATA,
        "--index-version",
        version,
        "--listen",
        "0.0.0.0:8080",
        "--log-format",
        "json",
    ]
    .map(String::from)
    .to_vec();
    let (mut volumes, mut mounts) = pod_volumes(
        &corpus.spec.storage.claim_name,
        &corpus.name_any(),
        DataAccess::Serve,
        &config_name,
    );
    if let Some(secret) = &serving.token_secret {
        args.extend(["--token-file".into(), format!("{}/tokens", paths::TOKENS)]);
        volumes.push(Volume {
            name: "tokens".into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret.clone()),
                ..Default::default()
            }),
            ..Default::default()
        });
        mounts.push(mount("tokens", paths::TOKENS, true));
    }
    // The embedding service's key and the graph store's password, as the
    // ingest pods have them.
    mount_secrets(&active.secrets, &mut volumes, &mut mounts);
    let probe = |path: &str, period: i32, failures: i32| Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::String("http".into()),
            ..Default::default()
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failures),
        ..Default::default()
    };
    let container = Container {
        name: "serve".into(),
        image: Some(settings.image.clone()),
        image_pull_policy: Some(settings.image_pull_policy.clone()),
        args: Some(args),
        env: Some(vec![EnvVar {
            name: crate::locations::SECRET_ROOT_ENV.into(),
            value: Some(paths::SECRET_ROOT.into()),
            ..Default::default()
        }]),
        ports: Some(vec![ContainerPort {
            name: Some("http".into()),
            container_port: CONTAINER_PORT,
            protocol: Some("TCP".into()),
            ..Default::default()
        }]),
        // Loading an index and warming the encoder takes a while on a
        // large corpus: the startup probe allows 5 minutes before liveness
        // applies.
        startup_probe: Some(probe("/healthz", 5, 60)),
        liveness_probe: Some(probe("/healthz", 10, 3)),
        readiness_probe: Some(probe("/readyz", 5, 2)),
        resources: Some(
            serving
                .resources
                .clone()
                .unwrap_or_else(|| super::default_resources("retrieval")),
        ),
        volume_mounts: Some(mounts),
        security_context: Some(container_security()),
        ..Default::default()
    };
    let mut pod_labels = labels.clone();
    pod_labels.extend(selector(&name));
    let mut template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: Some(BTreeMap::from([
                (INDEX_VERSION_ANNOTATION.to_string(), version.to_string()),
                (CONFIG_HASH_ANNOTATION.to_string(), config_hash),
            ])),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            automount_service_account_token: Some(false),
            security_context: Some(pod_security()),
            termination_grace_period_seconds: Some(30),
            containers: vec![container],
            volumes: Some(volumes),
            ..Default::default()
        }),
    };
    super::template::apply(&serving.template, settings, &mut template);
    let secrets = template
        .spec
        .as_ref()
        .map(referenced_secrets)
        .unwrap_or_default();
    if !secrets.is_empty() {
        let stamp: Vec<String> = secrets
            .iter()
            .map(|s| format!("{s}={}", secret_versions.get(s).map_or("", String::as_str)))
            .collect();
        template
            .metadata
            .get_or_insert_with(Default::default)
            .annotations
            .get_or_insert_with(Default::default)
            .insert(
                SECRETS_ANNOTATION.into(),
                short_hash(&[stamp.join(",").as_bytes()]),
            );
    }
    let deployment = Deployment {
        metadata: meta(workload.clone(), labels.clone()),
        spec: Some(DeploymentSpec {
            replicas: Some(serving.replicas),
            progress_deadline_seconds: serving
                .progress_deadline_seconds
                .map(super::ingest::saturating_i32),
            selector: LabelSelector {
                match_labels: Some(selector(&name)),
                ..Default::default()
            },
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::Int(1)),
                    max_unavailable: Some(IntOrString::Int(0)),
                }),
            }),
            template,
            ..Default::default()
        }),
        status: None,
    };
    let service = Service {
        metadata: meta(workload.clone(), labels.clone()),
        spec: Some(ServiceSpec {
            selector: Some(selector(&name)),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: serving.port,
                target_port: Some(IntOrString::String("http".into())),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    };
    let budget = (serving.replicas >= 2).then(|| PodDisruptionBudget {
        metadata: meta(workload.clone(), labels.clone()),
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(
                serving.min_available.clamp(0, serving.replicas - 1),
            )),
            selector: Some(LabelSelector {
                match_labels: Some(selector(&name)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    });
    let network_policy = settings
        .network_policy
        .then(|| network_policy(meta(workload, labels), &name, serving));
    Ok(Objects {
        config,
        deployment,
        service,
        budget,
        network_policy,
    })
}

/// The retrieval pods' NetworkPolicy: in, only to the serving port, from
/// the route's `allowedClients` (anywhere when it lists none); out,
/// anywhere but link-local addresses, where cloud metadata answers (the
/// embedding service and the graph store are often inside the cluster,
/// so private ranges stay open), and DNS.
fn network_policy(
    metadata: ObjectMeta,
    name: &str,
    serving: &crate::spec::ServingSpec,
) -> NetworkPolicy {
    let everywhere_but = |cidr: &str, except: &str| NetworkPolicyPeer {
        ip_block: Some(IPBlock {
            cidr: cidr.into(),
            except: Some(vec![except.into()]),
        }),
        ..Default::default()
    };
    NetworkPolicy {
        metadata,
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(selector(name)),
                ..Default::default()
            }),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: (!serving.allowed_clients.is_empty())
                    .then(|| serving.allowed_clients.clone()),
                ports: Some(vec![NetworkPolicyPort {
                    port: Some(IntOrString::String("http".into())),
                    protocol: Some("TCP".into()),
                    ..Default::default()
                }]),
            }]),
            egress: Some(vec![
                NetworkPolicyEgressRule {
                    to: Some(vec![
                        everywhere_but("0.0.0.0/0", "169.254.0.0/16"),
                        everywhere_but("::/0", "fe80::/10"),
                    ]),
                    ports: None,
                },
                // DNS anywhere: NodeLocal DNSCache answers on a link-local
                // address (169.254.20.10).
                NetworkPolicyEgressRule {
                    to: None,
                    ports: Some(
                        ["UDP", "TCP"]
                            .map(|protocol| NetworkPolicyPort {
                                port: Some(IntOrString::Int(53)),
                                protocol: Some(protocol.into()),
                                ..Default::default()
                            })
                            .to_vec(),
                    ),
                },
            ]),
        }),
    }
}

/// The index version a Deployment's pod template serves.
pub fn template_version(deployment: &Deployment) -> Option<&str> {
    template_annotation(deployment, INDEX_VERSION_ANNOTATION)
}

/// A pod template annotation of a Deployment.
pub fn template_annotation<'d>(deployment: &'d Deployment, key: &str) -> Option<&'d str> {
    deployment
        .spec
        .as_ref()?
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// Whether every replica of the Deployment runs its current template and
/// is available.
fn rolled_out(deployment: &Deployment) -> bool {
    let wanted = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let Some(status) = &deployment.status else {
        return false;
    };
    let generation = deployment.metadata.generation.unwrap_or(0);
    status.observed_generation.unwrap_or(0) >= generation
        && status.updated_replicas.unwrap_or(0) >= wanted
        && status.available_replicas.unwrap_or(0) >= wanted
        && status.replicas.unwrap_or(0) == wanted
}

/// Plans the reconcile of `route`; every condition that changes is
/// announced by an Event.
pub fn plan_route(
    route: &RetrievalRoute,
    observed: &Observed,
    settings: &Settings,
    now: &str,
) -> Result<Plan, Error> {
    let before = route
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut plan = plan_serving(route, observed, settings, now)?;
    if !super::is_paused(&route.metadata) {
        summarize(&mut plan.status, route.metadata.generation, now);
    }
    conditions::transitions(&before, &plan.status.conditions, &mut plan.events);
    Ok(plan)
}

/// kstatus' `Ready` from `Progressing` and `Available`: ready while the
/// pods serve and no rollout is under way or stuck; then `Reconciling`
/// (a rollout, a wait for an index) and `Stalled` (a rollout past its
/// deadline, an invalid spec, a missing or unreadable Corpus).
fn summarize(status: &mut RetrievalRouteStatus, generation: Option<i64>, now: &str) {
    let progressing = conditions::get(&status.conditions, "Progressing").cloned();
    let available = conditions::get(&status.conditions, "Available").cloned();
    let ready = match (&progressing, &available) {
        (Some(p), _) if p.status == "True" => {
            Set::new("Ready", false, &p.reason, p.message.clone())
        }
        (Some(p), _) if STALLED.contains(&p.reason.as_str()) => {
            Set::new("Ready", false, &p.reason, p.message.clone())
        }
        (_, Some(a)) if a.status == "True" => Set::new(
            "Ready",
            true,
            "Serving",
            match &status.served_version {
                Some(version) => format!(
                    "{} pods serve index version {version}",
                    status.ready_replicas
                ),
                None => format!("{} pods ready", status.ready_replicas),
            },
        ),
        (_, Some(a)) => Set::new("Ready", false, &a.reason, a.message.clone()),
        (Some(p), None) => Set::new("Ready", false, &p.reason, p.message.clone()),
        (None, None) => return,
    };
    conditions::set(&mut status.conditions, ready, generation, now);
    conditions::abnormal_from_ready(&mut status.conditions, Some("Progressing"), generation, now);
}

/// `Progressing=False` reasons that need a change from outside.
const STALLED: &[&str] = &[
    "ProgressDeadlineExceeded",
    "InvalidSpec",
    "CorpusNotFound",
    "CorpusInvalid",
];

fn plan_serving(
    route: &RetrievalRoute,
    observed: &Observed,
    settings: &Settings,
    now: &str,
) -> Result<Plan, Error> {
    let generation = route.metadata.generation;
    let mut plan = Plan {
        objects: None,
        status: route.status.clone().unwrap_or_default(),
        prune_configs: None,
        events: Vec::new(),
    };
    let set = |plan: &mut Plan, change: Set<'_>| {
        conditions::set(&mut plan.status.conditions, change, generation, now)
    };

    if super::is_paused(&route.metadata) {
        // Not acted on: observedGeneration stays where it was.
        set(&mut plan, Set::paused());
        return Ok(plan);
    }
    plan.status.observed_generation = generation;
    conditions::remove(&mut plan.status.conditions, "Paused");

    // What the running Deployment says, whatever happens next.
    if let Some(deployment) = &observed.deployment {
        let ready = deployment
            .status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0);
        plan.status.ready_replicas = ready;
        let done = rolled_out(deployment);
        if done && let Some(version) = template_version(deployment) {
            if plan.status.served_version.as_deref() != Some(version) {
                plan.events.push(Note::normal(
                    "ServedVersionChanged",
                    format!("pods serve index version {version}"),
                ));
            }
            plan.status.served_version = Some(version.to_string());
            plan.prune_configs =
                template_annotation(deployment, CONFIG_HASH_ANNOTATION).map(String::from);
        }
        let available = deployment
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Available"))
            .is_some_and(|c| c.status == "True");
        set(
            &mut plan,
            if available {
                Set::new(
                    "Available",
                    true,
                    "MinimumReplicasAvailable",
                    format!("{ready} pods ready"),
                )
            } else {
                Set::new(
                    "Available",
                    false,
                    "ReplicasUnavailable",
                    format!("{ready} pods ready"),
                )
            },
        );
        // A rollout the Deployment gave up on (its progress deadline) is
        // reported as the Deployment reports it.
        let stalled = deployment
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Progressing"))
            .filter(|c| c.status == "False");
        set(
            &mut plan,
            match stalled {
                Some(c) if !done => Set::new(
                    "Progressing",
                    false,
                    c.reason.as_deref().unwrap_or("ProgressDeadlineExceeded"),
                    c.message.clone().unwrap_or_default(),
                ),
                _ if done => Set::new(
                    "Progressing",
                    false,
                    "RolloutComplete",
                    "every pod runs the current template",
                ),
                _ => Set::new("Progressing", true, "RollingOut", "pods are being replaced"),
            },
        );
    }

    let problems = super::template::problems(&route.spec.serving.template, "spec.serving.template");
    if !problems.is_empty() {
        // The pods keep serving what they serve; nothing is applied.
        set(
            &mut plan,
            Set::new("Progressing", false, "InvalidSpec", problems.join("; ")),
        );
        return Ok(plan);
    }
    if let Some(reason) = &observed.corpus_unreadable {
        // The pods keep serving what they serve; nothing is applied.
        let message = format!(
            "Corpus {:?} cannot be read by this operator: {reason}",
            route.spec.corpus_ref.name
        );
        set(
            &mut plan,
            Set::new("Progressing", false, "CorpusInvalid", message),
        );
        return Ok(plan);
    }
    let Some(corpus) = &observed.corpus else {
        let message = format!(
            "Corpus {:?} not found in this namespace",
            route.spec.corpus_ref.name
        );
        set(
            &mut plan,
            Set::new("Progressing", false, "CorpusNotFound", message.clone()),
        );
        if observed.deployment.is_none() {
            set(
                &mut plan,
                Set::new("Available", false, "CorpusNotFound", message),
            );
        }
        return Ok(plan);
    };
    let Some(active) = corpus.status.as_ref().and_then(|s| s.active_index.as_ref()) else {
        let message = format!("Corpus {} has no index version yet", corpus.name_any());
        set(
            &mut plan,
            Set::new("Progressing", true, "WaitingForIndex", message.clone()),
        );
        if observed.deployment.is_none() {
            set(
                &mut plan,
                Set::new("Available", false, "WaitingForIndex", message),
            );
        }
        return Ok(plan);
    };
    if let Some(message) = unreadable_format(active) {
        // Rebuild first, roll after: the pods that run keep serving the
        // version with the release that built it, and nothing is applied
        // (a new template would roll them onto a binary that cannot open
        // it) until the Corpus publishes a version this build reads.
        set(
            &mut plan,
            Set::new("Progressing", true, "AwaitingReindex", message.clone()),
        );
        if observed.deployment.is_none() {
            set(
                &mut plan,
                Set::new("Available", false, "AwaitingReindex", message),
            );
        }
        return Ok(plan);
    }
    let mut objects = route_objects(route, corpus, active, settings, &observed.secret_versions)?;
    if let Some(spec) = objects.deployment.spec.as_mut() {
        super::storage::place(
            &mut spec.template,
            &corpus.spec.storage.claim_name,
            super::storage::Placement::of(observed.data_claim.as_ref()),
        );
    }
    let changes_template = observed.deployment.as_ref().is_none_or(|d| {
        template_version(d) != Some(active.version.as_str())
            || template_annotation(d, CONFIG_HASH_ANNOTATION)
                != template_annotation(&objects.deployment, CONFIG_HASH_ANNOTATION)
    });
    let secrets_changed = observed.deployment.as_ref().is_some_and(|d| {
        template_annotation(d, SECRETS_ANNOTATION)
            != template_annotation(&objects.deployment, SECRETS_ANNOTATION)
    });
    if changes_template || secrets_changed {
        plan.prune_configs = None;
        let message = if changes_template {
            format!("rolling pods to index version {}", active.version)
        } else {
            "rolling pods: a Secret they read changed".to_string()
        };
        set(
            &mut plan,
            Set::new("Progressing", true, "NewTemplate", message),
        );
        if observed.deployment.is_none() {
            set(
                &mut plan,
                Set::new(
                    "Available",
                    false,
                    "Deploying",
                    "the first pods are starting",
                ),
            );
        }
    }
    plan.objects = Some(objects);
    Ok(plan)
}
