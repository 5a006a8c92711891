//! What every kind shares: objects owned by their resource, pause, the
//! retry backoff, kstatus conditions, pod templates and Secrets reaching
//! the pods that build and serve a version.

use super::*;

/// A template of every kind the issue names, as a user writes it.
fn template_json() -> serde_json::Value {
    serde_json::json!({
        "metadata": {
            "labels": {"team": "search", "app.kubernetes.io/name": "not-trellis"},
            "annotations": {"cost-center": "42"}
        },
        "nodeSelector": {"pool": "cpu"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "rag", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [{
            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"
        }],
        "priorityClassName": "rag-batch",
        "imagePullSecrets": [{"name": "team-cred"}],
        "env": [{"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": {"name": "openai", "key": "key"}}}],
        "envFrom": [{"configMapRef": {"name": "proxy"}}],
        "volumes": [{"name": "ca", "configMap": {"name": "corporate-ca"}}],
        "volumeMounts": [{"name": "ca", "mountPath": "/etc/ssl/corporate", "readOnly": true}]
    })
}

fn assert_templated(pod: &PodTemplateSpec) {
    let meta = pod.metadata.as_ref().unwrap();
    let labels = meta.labels.as_ref().unwrap();
    assert_eq!(labels["team"], "search");
    assert_eq!(
        labels["app.kubernetes.io/name"], "trellis",
        "the operator's labels win"
    );
    assert_eq!(meta.annotations.as_ref().unwrap()["cost-center"], "42");
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(spec.node_selector.as_ref().unwrap()["pool"], "cpu");
    assert_eq!(spec.tolerations.as_ref().unwrap().len(), 1);
    assert_eq!(spec.topology_spread_constraints.as_ref().unwrap().len(), 1);
    assert_eq!(spec.priority_class_name.as_deref(), Some("rag-batch"));
    let pull: Vec<&str> = spec
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(
        pull,
        ["registry-cred", "team-cred"],
        "the chart's, then the template's"
    );
    assert!(spec.volumes.iter().flatten().any(|v| v.name == "data"));
    assert!(spec.volumes.iter().flatten().any(|v| v.name == "ca"));
    let container = &spec.containers[0];
    let env: Vec<&str> = container
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert!(
        env.contains(&"TRELLIS_SECRET_ROOT") && env.contains(&"OPENAI_API_KEY"),
        "{env:?}"
    );
    assert_eq!(container.env_from.as_ref().unwrap().len(), 1);
    let mounts = mount_paths(container);
    assert!(mounts.contains(&"/etc/ssl/corporate"), "{mounts:?}");
}

#[test]
fn every_object_built_is_owned_by_its_resource() {
    let c = corpus();
    let mut shards = corpus();
    shards.spec.ingest.shards = 2;
    let finalize = plan(
        &shards,
        &Observed {
            ingest_job: Some(finished_job(true)),
            ..with_profile()
        },
    );
    for desired in plan(&c, &with_profile())
        .apply
        .iter()
        .chain(&finalize.apply)
    {
        let meta = match desired {
            Desired::ServiceAccount(o) => &o.metadata,
            Desired::Role(o) => &o.metadata,
            Desired::RoleBinding(o) => &o.metadata,
            Desired::ConfigMap(o) => &o.metadata,
            Desired::NetworkPolicy(o) => &o.metadata,
            Desired::Job(o) => &o.metadata,
        };
        assert!(controlled_by(meta, &c.metadata), "{:?}", meta.name);
    }
    let r = route();
    let objects = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let mut metas = vec![
        &objects.config.metadata,
        &objects.deployment.metadata,
        &objects.service.metadata,
    ];
    metas.extend(objects.budget.as_ref().map(|b| &b.metadata));
    for meta in metas {
        assert!(controlled_by(meta, &r.metadata), "{:?}", meta.name);
    }
}

#[test]
fn paused_objects_keep_their_observed_generation() {
    let mut c = corpus();
    c.metadata.generation = Some(5);
    c.status = Some(crate::spec::CorpusStatus {
        observed_generation: Some(4),
        ..Default::default()
    });
    c.metadata.annotations = Some(BTreeMap::from([(
        PAUSED_ANNOTATION.to_string(),
        "true".to_string(),
    )]));
    let p = plan(&c, &with_profile());
    assert_eq!(p.status.observed_generation, Some(4));
    assert_eq!(p.events.len(), 1, "{:?}", p.events);
    assert_eq!(p.events[0].reason, "PausedByAnnotation");

    let mut r = route();
    r.metadata.generation = Some(3);
    r.metadata.annotations = c.metadata.annotations.clone();
    let paused = route_plan(&r, &route::Observed::default());
    assert_eq!(paused.status.observed_generation, None);
    assert!(conditions::is_true(&paused.status.conditions, "Paused"));
}

#[test]
fn failed_reconciles_back_off() {
    use super::controller::retry_after;
    let waits: Vec<u64> = (1..=9).map(|n| retry_after(n).as_secs()).collect();
    assert_eq!(waits, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
}

#[test]
fn every_kind_reports_kstatus_ready_reconciling_and_stalled() {
    let mut bad = profile();
    bad.spec.chunking.min_tokens = 500;
    bad.spec.chunking.max_tokens = 100;
    let status = super::profile::plan_profile(&bad, "2026-11-24T00:00:00Z");
    assert!(!conditions::is_true(&status.conditions, "Ready"));
    assert!(conditions::is_true(&status.conditions, "Stalled"));
    let status = super::profile::plan_profile(&profile(), "2026-11-24T00:00:00Z");
    assert!(conditions::is_true(&status.conditions, "Ready"));
    assert!(conditions::get(&status.conditions, "Stalled").is_none());

    // A first ingest is reconciling; a failed one stalls.
    let started = plan(&corpus(), &with_profile());
    assert!(conditions::is_true(
        &started.status.conditions,
        "Reconciling"
    ));
    assert!(!conditions::is_true(&started.status.conditions, "Stalled"));
    let mut observed = with_profile();
    let inputs = started.inputs.clone();
    observed.ingest_job = Some(finished_job(false));
    let mut running = corpus();
    running.status = Some(started.status.clone());
    let failed = plan(&running, &observed);
    assert!(
        conditions::is_true(&failed.status.conditions, "Stalled"),
        "{inputs}: {:?}",
        failed.status.conditions
    );
    assert!(!conditions::is_true(
        &failed.status.conditions,
        "Reconciling"
    ));
}

#[test]
fn templates_reach_ingest_and_retrieval_pods() {
    let mut c = corpus();
    c.spec.ingest.template = serde_json::from_value(template_json()).unwrap();
    let p = plan(&c, &with_profile());
    let job = job_of(&p).expect("an ingest Job");
    assert_templated(&job.spec.as_ref().unwrap().template);

    let mut r = route();
    r.spec.serving.template = serde_json::from_value(template_json()).unwrap();
    let plan = plan_over(&r, Some(active_corpus("v1")), None);
    let deployment = plan.objects.unwrap().deployment;
    assert_templated(&deployment.spec.as_ref().unwrap().template);
}

#[test]
fn template_clashes_with_the_operators_own_names_are_refused() {
    let clash = serde_json::json!({
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "secret-0", "emptyDir": {}}],
        "volumeMounts": [{"name": "x", "mountPath": "/var/lib/trellis/cache"}],
        "env": [{"name": "TRELLIS_SECRET_ROOT", "value": "/elsewhere"}]
    });
    let mut c = corpus();
    c.spec.ingest.template = serde_json::from_value(clash.clone()).unwrap();
    let p = plan(&c, &with_profile());
    assert!(job_of(&p).is_none());
    let ready = conditions::get(&p.status.conditions, "Ready").unwrap();
    assert_eq!(ready.reason, "InvalidSpec");
    for needle in [
        "\"data\"",
        "\"secret-0\"",
        "/var/lib/trellis/cache",
        "TRELLIS_SECRET_ROOT",
    ] {
        assert!(
            ready.message.contains(needle),
            "{needle}: {}",
            ready.message
        );
    }

    let mut r = route();
    r.spec.serving.template = serde_json::from_value(clash).unwrap();
    let plan = plan_over(&r, Some(active_corpus("v1")), None);
    assert!(plan.objects.is_none());
    let progressing = conditions::get(&plan.status.conditions, "Progressing").unwrap();
    assert_eq!(progressing.reason, "InvalidSpec");
    assert!(progressing.message.contains("spec.serving.template"));
}

#[test]
fn provider_and_graph_secrets_reach_the_pods_that_build_and_serve_a_version() {
    let mut observed = with_profile();
    let profile = observed.profile.as_mut().unwrap();
    profile.spec.embedding = serde_json::from_value(serde_json::json!({
        "provider": "openai",
        "model": "text-embedding-3-small",
        "apiKeySecretRef": {"name": "openai", "key": "api-key"}
    }))
    .unwrap();
    profile.spec.graph = serde_json::from_value(serde_json::json!({
        "store": "neo4j",
        "neo4j": {"uri": "bolt://neo4j:7687", "passwordSecretRef": {"name": "neo4j-auth"}}
    }))
    .unwrap();
    assert_eq!(profile.spec.secret_names(), ["neo4j-auth", "openai"]);
    let p = plan(&corpus(), &observed);
    let job = job_of(&p).expect("an ingest Job");
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let secrets: Vec<&str> = pod
        .volumes
        .iter()
        .flatten()
        .filter_map(|v| v.secret.as_ref()?.secret_name.as_deref())
        .collect();
    assert_eq!(secrets, ["neo4j-auth", "openai"]);

    // The version's status names them; the route's pods mount them.
    let mut c = active_corpus("v1");
    if let Some(active) = c.status.as_mut().and_then(|s| s.active_index.as_mut()) {
        active.secrets = vec!["neo4j-auth".into(), "openai".into()];
    }
    let plan = plan_over(&route(), Some(c), None);
    let deployment = plan.objects.unwrap().deployment;
    let pod = deployment.spec.unwrap().template.spec.unwrap();
    let mounts = mount_paths(&pod.containers[0]);
    for name in ["neo4j-auth", "openai"] {
        assert!(
            mounts.contains(&format!("/var/run/trellis/secrets/{name}").as_str()),
            "{mounts:?}"
        );
    }
}

/// A template's `serviceAccount.annotations` reach the ServiceAccount the
/// pods run as: the ingest pods' own, and one the route gets only when
/// its template asks.
#[test]
fn template_service_accounts_carry_a_cloud_identity() {
    let identity: crate::spec::TemplateServiceAccount = serde_json::from_value(serde_json::json!({
        "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/trellis"}
    }))
    .unwrap();
    let mut c = corpus();
    c.spec.ingest.template.service_account = Some(identity.clone());
    let account = plan(&c, &with_profile())
        .apply
        .into_iter()
        .find_map(|d| match d {
            Desired::ServiceAccount(a) => Some(a),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        account.metadata.annotations.unwrap()["eks.amazonaws.com/role-arn"],
        "arn:aws:iam::1:role/trellis"
    );

    let plain = plan_over(&route(), Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    assert!(plain.service_account.is_none());
    let pod = plain.deployment.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.service_account_name, None);

    let mut r = route();
    r.spec.serving.template.service_account = Some(identity);
    let objects = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let account = objects.service_account.unwrap();
    assert!(controlled_by(&account.metadata, &r.metadata));
    assert_eq!(account.automount_service_account_token, Some(false));
    let pod = objects.deployment.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.service_account_name, account.metadata.name);
    assert_eq!(pod.automount_service_account_token, Some(false));
}
