//! The objects of a route: its Deployment and pods, Service, budget,
//! NetworkPolicy and configuration, and what the pods mount.

use super::*;

/// What a route's first plan sees: its Corpus with version v1 active, and
/// no Deployment yet.
fn first_sight() -> route::Observed {
    route::Observed {
        corpus_unreadable: None,
        corpus: Some(active_corpus("v1")),
        deployment: None,
        ..Default::default()
    }
}

#[test]
fn a_route_runs_a_hardened_deployment() {
    let r = route();
    let plan = route_plan(&r, &first_sight());
    let objects = plan.objects.unwrap();
    let d = &objects.deployment;
    assert_eq!(d.metadata.name.as_deref(), Some("handbook-qa-retrieval"));
    let spec = d.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(2));
    let rolling = spec
        .strategy
        .as_ref()
        .unwrap()
        .rolling_update
        .as_ref()
        .unwrap();
    assert_eq!(
        rolling.max_unavailable,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(0))
    );
    let template = &spec.template;
    let annotations = template
        .metadata
        .as_ref()
        .unwrap()
        .annotations
        .as_ref()
        .unwrap();
    assert_eq!(annotations[INDEX_VERSION_ANNOTATION], "v1");
    let pod = template.spec.as_ref().unwrap();
    assert_eq!(pod.automount_service_account_token, Some(false));
    assert_eq!(
        pod.security_context.as_ref().unwrap().run_as_non_root,
        Some(true)
    );
    let c = &pod.containers[0];
    let args = c.args.as_ref().unwrap().join(" ");
    assert!(
        args.contains("serve -f /etc/trellis/manifests --route handbook-qa"),
        "{args}"
    );
    assert!(args.contains("--index-version v1"), "{args}");
    assert!(!args.contains("--token-file"), "{args}");
    let security = c.security_context.as_ref().unwrap();
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert_eq!(
        security.capabilities.as_ref().unwrap().drop.as_deref(),
        Some(&["ALL".to_string()][..])
    );
    let readiness = c
        .readiness_probe
        .as_ref()
        .unwrap()
        .http_get
        .as_ref()
        .unwrap();
    assert_eq!(readiness.path.as_deref(), Some("/readyz"));
    let liveness = c
        .liveness_probe
        .as_ref()
        .unwrap()
        .http_get
        .as_ref()
        .unwrap();
    assert_eq!(liveness.path.as_deref(), Some("/healthz"));
    // Only the corpus' versions, read-only: not another corpus', not the
    // embedding cache.
    assert_eq!(
        data_mounts(c),
        [(
            Some("indexes/handbook"),
            "/var/lib/trellis/indexes/handbook",
            Some(true)
        )]
    );

    assert!(conditions::is_true(&plan.status.conditions, "Progressing"));
    assert!(!conditions::is_true(&plan.status.conditions, "Available"));
}

#[test]
fn a_route_gets_a_service_and_a_budget_over_its_pods() {
    let objects = route_plan(&route(), &first_sight()).objects.unwrap();
    let selector = objects
        .deployment
        .spec
        .as_ref()
        .unwrap()
        .selector
        .match_labels
        .as_ref();
    let service = objects.service.spec.as_ref().unwrap();
    assert_eq!(service.ports.as_ref().unwrap()[0].port, 8080);
    assert_eq!(service.selector.as_ref(), selector);
    let budget = objects.budget.unwrap();
    assert_eq!(
        budget.spec.unwrap().min_available,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1))
    );
}

#[test]
fn a_routes_network_policy_opens_the_serving_port_to_its_clients() {
    let r = route();
    let observed = first_sight();
    let objects = route_plan(&r, &observed).objects.unwrap();
    let spec = objects.deployment.spec.as_ref().unwrap();
    // The NetworkPolicy selects the same pods: in, the serving port from
    // anywhere (the route names no clients); out, all but link-local, and
    // DNS.
    let policy = objects.network_policy.unwrap().spec.unwrap();
    assert_eq!(
        policy.pod_selector.as_ref().unwrap().match_labels.as_ref(),
        spec.selector.match_labels.as_ref()
    );
    let ingress = &policy.ingress.as_ref().unwrap()[0];
    assert_eq!(ingress.from, None);
    assert_eq!(
        ingress.ports.as_ref().unwrap()[0].port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("http".into()))
    );
    let egress = serde_json::to_value(&policy.egress).unwrap();
    assert_eq!(egress[0]["to"][0]["ipBlock"]["except"][0], "169.254.0.0/16");
    assert_eq!(egress[1]["ports"][0]["port"], 53);
    // Named clients only, when the route lists them; none without the
    // operator's setting.
    let mut narrow = r.clone();
    narrow.spec.serving.allowed_clients = serde_json::from_value(serde_json::json!([
        {"namespaceSelector": {"matchLabels": {"team": "search"}}}
    ]))
    .unwrap();
    let plan = route_plan(&narrow, &observed);
    let policy = plan.objects.unwrap().network_policy.unwrap().spec.unwrap();
    let from = policy.ingress.unwrap()[0].from.clone().unwrap();
    assert_eq!(from, narrow.spec.serving.allowed_clients);
    let off = Settings {
        network_policy: false,
        ..settings()
    };
    let plan = plan_route(&r, &observed, &off, "2026-11-24T00:00:00Z").unwrap();
    assert!(plan.objects.unwrap().network_policy.is_none());
}

#[test]
fn a_routes_configuration_is_a_manifest_its_pods_mount() {
    let r = route();
    let objects = route_plan(&r, &first_sight()).objects.unwrap();
    // The ConfigMap holds the route, readable as a manifest.
    assert_eq!(objects.config.immutable, Some(true));
    let yaml = &objects.config.data.as_ref().unwrap()["route.yaml"];
    let loaded = crate::spec::parse_str(yaml, std::path::Path::new("route.yaml")).unwrap();
    assert_eq!(loaded[0].manifest.as_route().unwrap().spec, r.spec);
    let pod = objects
        .deployment
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap();
    let volume = pod
        .volumes
        .as_ref()
        .unwrap()
        .iter()
        .find(|v| v.name == "manifests")
        .unwrap();
    assert_eq!(
        volume.config_map.as_ref().unwrap().name,
        objects.config.metadata.name.clone().unwrap()
    );
}

#[test]
fn a_token_secret_is_mounted_and_required() {
    let mut r = route();
    r.spec.serving.token_secret = Some("qa-tokens".into());
    r.spec.serving.replicas = 1;
    let plan = plan_over(&r, Some(active_corpus("v1")), None);
    let objects = plan.objects.unwrap();
    let pod = objects.deployment.spec.unwrap().template.spec.unwrap();
    let args = pod.containers[0].args.clone().unwrap().join(" ");
    assert!(
        args.contains("--token-file /etc/trellis/tokens/tokens"),
        "{args}"
    );
    let secret = pod
        .volumes
        .unwrap()
        .into_iter()
        .find_map(|v| v.secret)
        .unwrap();
    assert_eq!(secret.secret_name.as_deref(), Some("qa-tokens"));
    assert!(objects.budget.is_none(), "no budget over a single pod");
}

#[test]
fn a_route_anchored_in_the_graph_store_mounts_no_claim() {
    let mut r = route();
    r.spec.anchors.source = crate::spec::AnchorSource::Graph;
    // A version in no graph store: nothing is built, and the route says
    // why.
    let plan = plan_over(&r, Some(active_corpus("v1")), None);
    assert!(plan.objects.is_none());
    let progressing = conditions::get(&plan.status.conditions, "Progressing").unwrap();
    assert_eq!(progressing.reason, "NotInGraphStore");
    assert!(
        progressing.message.contains("v1"),
        "{}",
        progressing.message
    );

    let store = crate::spec::GraphSpec {
        store: crate::spec::GraphStoreKind::Neo4j,
        neo4j: Some(crate::spec::Neo4jSpec {
            uri: "bolt+s://neo4j.graph:7687".into(),
            database: None,
            username: "neo4j".into(),
            password_secret_ref: Some(crate::spec::SecretKeyRef {
                name: "neo4j-auth".into(),
                key: "password".into(),
            }),
            password_env: None,
        }),
        ..Default::default()
    };
    let mut corpus = active_corpus("v1");
    if let Some(active) = corpus.status.as_mut().and_then(|s| s.active_index.as_mut()) {
        active.graph = Some(store.clone());
        active.secrets = vec!["neo4j-auth".into()];
    }
    let plan = route_plan(
        &r,
        &route::Observed {
            corpus: Some(corpus),
            data_claim: Some(k8s_openapi::api::core::v1::PersistentVolumeClaim {
                spec: Some(k8s_openapi::api::core::v1::PersistentVolumeClaimSpec {
                    access_modes: Some(vec!["ReadWriteOnce".into()]),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    let objects = plan.objects.expect("objects");
    // The store's section reaches the pods whole (TLS scheme included),
    // beside the route, and the password's Secret is mounted.
    let data = objects.config.data.as_ref().unwrap();
    let json = &data[deployment::GRAPH_STORE_FILE];
    let read: crate::spec::GraphSpec = serde_yaml::from_str(json).unwrap();
    assert_eq!(read, store);
    let template = objects.deployment.spec.unwrap().template;
    let pod = template.spec.unwrap();
    let args = pod.containers[0].args.clone().unwrap().join(" ");
    assert!(
        args.contains("--index-from-graph /etc/trellis/manifests/graph-store.json"),
        "{args}"
    );
    assert!(args.contains("--index-version v1"), "{args}");
    let volumes = pod.volumes.clone().unwrap();
    assert!(volumes.iter().all(|v| v.persistent_volume_claim.is_none()));
    let data_volume = volumes.iter().find(|v| v.name == "data").unwrap();
    assert!(data_volume.empty_dir.is_some());
    assert_eq!(
        data_mounts(&pod.containers[0]),
        [(None, "/var/lib/trellis", Some(false))]
    );
    assert!(deployment::referenced_secrets(&pod).contains(&"neo4j-auth".to_string()));
    // A single-node claim places nothing: the pods have no claim.
    assert!(pod.affinity.is_none());
    assert!(
        !template
            .metadata
            .unwrap()
            .labels
            .unwrap()
            .contains_key(crate::operator::storage::DATA_CLAIM_LABEL)
    );
}

#[test]
fn a_reranking_service_key_is_mounted_into_the_route_pods_only_when_a_service_reads_it() {
    let mut r = route();
    r.spec.reranker = crate::spec::RerankerSpec {
        kind: crate::spec::RerankerKind::Cohere,
        model: "rerank-v3.5".into(),
        endpoint: Some("https://api.cohere.com".into()),
        api_key_secret_ref: Some(crate::spec::SecretKeyRef {
            name: "cohere".into(),
            key: "api-key".into(),
        }),
        ..Default::default()
    };
    let corpus = active_corpus("v1");
    let names = deployment::secret_names(&r, &corpus, &settings());
    assert!(names.contains(&"cohere".to_string()), "{names:?}");
    let objects = route_plan(
        &r,
        &route::Observed {
            corpus: Some(corpus.clone()),
            ..Default::default()
        },
    )
    .objects
    .unwrap();
    let pod = objects.deployment.spec.unwrap().template.spec.unwrap();
    let mounted = pod.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .any(|m| m.mount_path.ends_with("/cohere"));
    assert!(mounted, "the Secret is mounted under the secret root");

    // A local cross-encoder reads no key: a stale secret ref mounts nothing.
    r.spec.reranker.kind = crate::spec::RerankerKind::Local;
    let names = deployment::secret_names(&r, &corpus, &settings());
    assert!(!names.contains(&"cohere".to_string()), "{names:?}");
}

/// The chart's PodMonitor scrapes the retrieval pods by labels and a port
/// they have.
#[test]
fn the_charts_pod_monitor_selects_the_retrieval_pods() {
    let template = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/charts/trellis/templates/podmonitor.yaml"
    ))
    .unwrap();
    let selector = template
        .split("matchLabels:")
        .nth(1)
        .and_then(|rest| rest.split("namespaceSelector:").next())
        .unwrap();
    let objects = plan_over(&route(), Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let pod = objects.deployment.spec.unwrap().template;
    let labels = pod.metadata.unwrap().labels.unwrap();
    let mut selected = 0;
    for line in selector.lines().filter(|l| l.contains(": ")) {
        let (key, value) = line.trim().split_once(": ").unwrap();
        assert_eq!(labels.get(key).map(String::as_str), Some(value), "{key}");
        selected += 1;
    }
    assert_eq!(selected, 3, "{selector}");
    assert!(template.contains("- port: http"));
    let ports = pod.spec.unwrap().containers[0].ports.clone().unwrap();
    assert!(ports.iter().any(|p| p.name.as_deref() == Some("http")));
}

/// Retrieval pods are told the profile the operator rendered, by hash.
#[test]
fn retrieval_pods_are_given_the_rendered_profiles_hash() {
    let mut corpus = active_corpus("v1");
    if let Some(active) = corpus.status.as_mut().and_then(|s| s.active_index.as_mut()) {
        active.served_profile = Some("00aa11bb22cc33dd".into());
    }
    let objects = plan_over(&route(), Some(corpus), None).objects.unwrap();
    let args = objects
        .deployment
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0]
        .args
        .clone()
        .unwrap();
    let at = args.iter().position(|a| a == "--profile-hash").unwrap();
    assert_eq!(args[at + 1], "00aa11bb22cc33dd");
}
