//! The objects of a route: the Deployment running `trellis serve` over
//! one index version, the immutable ConfigMap it reads, its Service,
//! PodDisruptionBudget and NetworkPolicy.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ContainerPort, EnvVar, HTTPGetAction, PodSpec, PodTemplateSpec, Probe,
    SecretVolumeSource, Service, ServiceAccount, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer,
    NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;

use super::pod::{
    DataAccess, container_security, mount, mount_secrets, pod_security, pod_volumes, saturating_i32,
};
use super::{
    CONFIG_HASH_ANNOTATION, CORPUS_LABEL, Error, INDEX_VERSION_ANNOTATION, ROUTE_LABEL,
    SECRETS_ANNOTATION, Settings, common_labels, object_name, paths, short_hash,
};
use crate::spec::{
    AnchorSource, Corpus, IndexVersionStatus, RetrievalRoute, RetrievalRouteSpec, ServingSpec,
};

/// The port `trellis serve` listens on inside the pod.
const CONTAINER_PORT: i32 = 8080;

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
    /// Only when the route's template asks for one (a cloud identity);
    /// otherwise the pods run as the namespace's `default`, with no token.
    pub service_account: Option<ServiceAccount>,
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

/// The key of a route's ConfigMap holding, for a route anchored in the
/// graph store, that store's section of the version's profile (JSON, which
/// the manifest loader passes over).
pub const GRAPH_STORE_FILE: &str = "graph-store.json";

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
    let name = route.name_any();
    let owned = Owned::new(route, corpus)?;
    let config = RouteConfig::new(route, active, &owned)?;
    let mut template = pod_template(route, corpus, active, settings, &owned, &config);
    stamp_secrets(&mut template, secret_versions);
    let workload = workload_name(&name);
    let serving = &route.spec.serving;
    let network_policy = settings
        .network_policy
        .then(|| network_policy(owned.meta(&workload), &name, &route.spec));
    Ok(Objects {
        config: config.map,
        deployment: deployment(owned.meta(&workload), &name, serving, template),
        service: service(owned.meta(&workload), &name, serving),
        budget: budget(owned.meta(&workload), &name, serving),
        network_policy,
        service_account: service_account(owned.meta(&workload), serving),
    })
}

/// What every object of a route carries: its namespace, its labels and
/// the route as its controller.
struct Owned {
    namespace: Option<String>,
    labels: BTreeMap<String, String>,
    owner: OwnerReference,
}

impl Owned {
    fn new(route: &RetrievalRoute, corpus: &Corpus) -> Result<Self, Error> {
        let owner = super::owner_reference(route)?;
        let mut labels = common_labels("retrieval");
        labels.insert(ROUTE_LABEL.into(), super::label_value(&route.name_any()));
        labels.insert(CORPUS_LABEL.into(), super::label_value(&corpus.name_any()));
        Ok(Self {
            namespace: route.namespace(),
            labels,
            owner,
        })
    }

    /// The metadata of the object `name`, with the route's labels.
    fn meta(&self, name: &str) -> ObjectMeta {
        self.meta_labelled(name, self.labels.clone())
    }

    fn meta_labelled(&self, name: &str, labels: BTreeMap<String, String>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_string()),
            namespace: self.namespace.clone(),
            labels: Some(labels),
            owner_references: Some(vec![self.owner.clone()]),
            ..Default::default()
        }
    }
}

/// The route's configuration: the immutable ConfigMap its pods read,
/// named by the hash of what it holds.
struct RouteConfig {
    map: ConfigMap,
    /// The hash of the rendered route (and graph store section): a new
    /// one rolls the pods.
    hash: String,
    /// The pods read the version from the graph store, not the claim.
    from_graph: bool,
}

impl RouteConfig {
    fn new(
        route: &RetrievalRoute,
        active: &IndexVersionStatus,
        owned: &Owned,
    ) -> Result<Self, Error> {
        let manifests = render_manifest(route)?;
        // A route anchored in the graph store reads the version from the
        // store that holds it, as the ingest recorded it.
        let graph_store = match route.spec.anchors.source {
            AnchorSource::Graph => Some(
                serde_json::to_string(active.graph.as_ref().ok_or(Error::MissingField {
                    kind: "index version status",
                    field: "graph",
                })?)
                .map_err(|e| Error::Render(e.to_string()))?,
            ),
            AnchorSource::Embedded => None,
        };
        let from_graph = graph_store.is_some();
        let hash = short_hash(&[
            manifests.as_bytes(),
            graph_store.as_deref().unwrap_or_default().as_bytes(),
        ]);
        let name = object_name(&route.name_any(), &format!("config-{}", &hash[..8]));
        let mut labels = owned.labels.clone();
        labels.insert(CONFIG_HASH_ANNOTATION.into(), hash.clone());
        let map = ConfigMap {
            metadata: owned.meta_labelled(&name, labels),
            data: Some(
                std::iter::once(("route.yaml".to_string(), manifests))
                    .chain(graph_store.map(|json| (GRAPH_STORE_FILE.to_string(), json)))
                    .collect(),
            ),
            immutable: Some(true),
            ..Default::default()
        };
        Ok(Self {
            map,
            hash,
            from_graph,
        })
    }

    fn name(&self) -> &str {
        self.map.metadata.name.as_deref().unwrap_or_default()
    }
}

/// The pod template of the route's Deployment: `trellis serve` over the
/// version, the route's template applied, carrying the version and the
/// configuration hash, whose change rolls the pods.
fn pod_template(
    route: &RetrievalRoute,
    corpus: &Corpus,
    active: &IndexVersionStatus,
    settings: &Settings,
    owned: &Owned,
    config: &RouteConfig,
) -> PodTemplateSpec {
    let name = route.name_any();
    let serving = &route.spec.serving;
    let mut pod_labels = owned.labels.clone();
    pod_labels.extend(selector(&name));
    let mut template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: Some(BTreeMap::from([
                (INDEX_VERSION_ANNOTATION.to_string(), active.version.clone()),
                (CONFIG_HASH_ANNOTATION.to_string(), config.hash.clone()),
            ])),
            ..Default::default()
        }),
        spec: Some(serve_pod(route, corpus, active, settings, config)),
    };
    super::template::apply(&serving.template, settings, &mut template);
    if serving.template.service_account.is_some()
        && let Some(spec) = template.spec.as_mut()
    {
        spec.service_account_name = Some(workload_name(&name));
    }
    template
}

/// The retrieval pod: its one container and the volumes it mounts (the
/// data claim, or none when the version comes from the graph store; the
/// configuration; the route's tokens; the Secrets of the version's
/// profile and of the route's reranking and generation services).
fn serve_pod(
    route: &RetrievalRoute,
    corpus: &Corpus,
    active: &IndexVersionStatus,
    settings: &Settings,
    config: &RouteConfig,
) -> PodSpec {
    let serving = &route.spec.serving;
    let (mut args, access) = serve_args(&route.name_any(), active, config.from_graph);
    let (mut volumes, mut mounts) = pod_volumes(
        &corpus.spec.storage.claim_name,
        &corpus.name_any(),
        access,
        config.name(),
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
    // ingest pods have them, and the route's reranking and generation
    // service keys (which no ingest pod ever mounts).
    let mut secrets: Vec<&str> = active.secrets.iter().map(String::as_str).collect();
    secrets.extend(route.spec.reranker.secret_name());
    secrets.extend(route.spec.generation.secret_name());
    secrets.sort_unstable();
    secrets.dedup();
    mount_secrets(&secrets, &mut volumes, &mut mounts);
    PodSpec {
        automount_service_account_token: Some(false),
        security_context: Some(pod_security()),
        termination_grace_period_seconds: Some(30),
        containers: vec![serve_container(serving, settings, args, mounts)],
        volumes: Some(volumes),
        ..Default::default()
    }
}

/// The arguments of `trellis serve` for route `name` over `active`, and
/// how the pod reaches the version's data.
fn serve_args(
    name: &str,
    active: &IndexVersionStatus,
    from_graph: bool,
) -> (Vec<String>, DataAccess) {
    let mut args = [
        "serve",
        "-f",
        paths::MANIFESTS,
        "--route",
        name,
        "--data-dir",
        paths::DATA,
        "--index-version",
        &active.version,
        "--listen",
        "0.0.0.0:8080",
        "--log-format",
        "json",
    ]
    .map(String::from)
    .to_vec();
    // The profile the operator rendered for the version, by hash: the
    // pods refuse a version whose profile.json says otherwise.
    if let Some(hash) = &active.served_profile {
        args.extend(["--profile-hash".into(), hash.clone()]);
    }
    if !from_graph {
        return (args, DataAccess::Serve);
    }
    args.extend([
        "--index-from-graph".into(),
        format!("{}/{GRAPH_STORE_FILE}", paths::MANIFESTS),
    ]);
    (args, DataAccess::ServeFromGraph)
}

/// The `serve` container: hardened, probed, with the route's resources
/// (else the chart's).
fn serve_container(
    serving: &ServingSpec,
    settings: &Settings,
    args: Vec<String>,
    mounts: Vec<VolumeMount>,
) -> Container {
    Container {
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
                .unwrap_or_else(|| settings.retrieval_resources.clone()),
        ),
        volume_mounts: Some(mounts),
        security_context: Some(container_security()),
        ..Default::default()
    }
}

/// An HTTP probe of `path` on the serving port every `period` seconds,
/// failing after `failures` misses.
fn probe(path: &str, period: i32, failures: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::String("http".into()),
            ..Default::default()
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failures),
        ..Default::default()
    }
}

/// Stamps the pod template with the resource versions of the Secrets its
/// pods read (when they read any), so that rotating one rolls them.
fn stamp_secrets(template: &mut PodTemplateSpec, secret_versions: &BTreeMap<String, String>) {
    let secrets = template
        .spec
        .as_ref()
        .map(referenced_secrets)
        .unwrap_or_default();
    if secrets.is_empty() {
        return;
    }
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

/// The Deployment: surge first, so that old pods serve until new ones are
/// ready.
fn deployment(
    metadata: ObjectMeta,
    name: &str,
    serving: &ServingSpec,
    template: PodTemplateSpec,
) -> Deployment {
    Deployment {
        metadata,
        spec: Some(DeploymentSpec {
            replicas: Some(serving.replicas),
            progress_deadline_seconds: serving.progress_deadline_seconds.map(saturating_i32),
            selector: LabelSelector {
                match_labels: Some(selector(name)),
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
    }
}

/// The Service in front of the route's pods, on `serving.port`.
fn service(metadata: ObjectMeta, name: &str, serving: &ServingSpec) -> Service {
    Service {
        metadata,
        spec: Some(ServiceSpec {
            selector: Some(selector(name)),
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
    }
}

/// The PodDisruptionBudget, only with two replicas or more: a budget over
/// one pod would block every node drain.
fn budget(metadata: ObjectMeta, name: &str, serving: &ServingSpec) -> Option<PodDisruptionBudget> {
    (serving.replicas >= 2).then(|| PodDisruptionBudget {
        metadata,
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(
                serving.min_available.clamp(0, serving.replicas - 1),
            )),
            selector: Some(LabelSelector {
                match_labels: Some(selector(name)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    })
}

/// The ServiceAccount the pods run as, only when the route's template
/// asks for one (a cloud identity).
fn service_account(metadata: ObjectMeta, serving: &ServingSpec) -> Option<ServiceAccount> {
    serving
        .template
        .service_account
        .as_ref()
        .map(|identity| ServiceAccount {
            metadata: ObjectMeta {
                annotations: Some(identity.annotations.clone()).filter(|a| !a.is_empty()),
                ..metadata
            },
            // The identity webhooks (IRSA, Azure) project their own
            // token; the Kubernetes API's is of no use to these pods.
            automount_service_account_token: Some(false),
            ..Default::default()
        })
}

/// The retrieval pods' NetworkPolicy: in, only to the serving port, from
/// the route's `allowedClients` (anywhere when it lists none); out,
/// anywhere but link-local addresses, and DNS
/// ([`egress_but_link_local`](super::pod::egress_but_link_local)); and
/// the generation service's address when the route names it by IP, so
/// that a generator the route was given is reached even at an address the
/// rest of the policy closes.
fn network_policy(metadata: ObjectMeta, name: &str, route: &RetrievalRouteSpec) -> NetworkPolicy {
    let serving = &route.serving;
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
            egress: Some(
                super::pod::egress_but_link_local()
                    .into_iter()
                    .chain(generator_egress(&route.generation))
                    .collect(),
            ),
        }),
    }
}

/// An egress rule to the generation service, when its endpoint is an IP
/// address: to that address alone, on its port.
fn generator_egress(generation: &crate::spec::GenerationSpec) -> Option<NetworkPolicyEgressRule> {
    let url = reqwest::Url::parse(generation.endpoint.as_deref()?).ok()?;
    let ip: std::net::IpAddr = url
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()?;
    let prefix = if ip.is_ipv4() { 32 } else { 128 };
    Some(NetworkPolicyEgressRule {
        to: Some(vec![NetworkPolicyPeer {
            ip_block: Some(IPBlock {
                cidr: format!("{ip}/{prefix}"),
                except: None,
            }),
            ..Default::default()
        }]),
        ports: Some(vec![NetworkPolicyPort {
            port: url
                .port_or_known_default()
                .map(|p| IntOrString::Int(i32::from(p))),
            protocol: Some("TCP".into()),
            ..Default::default()
        }]),
    })
}
