//! The RetrievalRoute plan: pods rolled to a new version or configuration,
//! held while the Corpus cannot be served, queued past the rollout cap, and
//! the status each leaves.

use super::*;

#[test]
fn a_route_only_change_rolls_pods_without_an_ingest() {
    let r = route();
    let c = active_corpus("v1");
    let first = plan_over(&r, Some(c.clone()), None).objects.unwrap();
    let running = rolled(&first.deployment, 2);

    // The same route and version: the template is unchanged.
    let same = plan_over(&r, Some(c.clone()), Some(running.clone()));
    assert_eq!(
        same.objects.unwrap().deployment.spec.unwrap().template,
        first.deployment.spec.clone().unwrap().template
    );
    assert_eq!(same.status.served_version.as_deref(), Some("v1"));
    assert!(!conditions::is_true(&same.status.conditions, "Progressing"));
    assert!(conditions::is_true(&same.status.conditions, "Available"));
    assert_eq!(same.status.ready_replicas, 2);

    // A route change: a new template (new config hash), the same version,
    // and the Corpus' plan has nothing to build.
    let mut changed = r.clone();
    changed.spec.selection.top_k = 9;
    let next = plan_over(&changed, Some(c.clone()), Some(running));
    let template = next.objects.unwrap().deployment.spec.unwrap().template;
    let before = first.deployment.spec.unwrap().template;
    assert_ne!(template, before);
    let annotations = template.metadata.unwrap().annotations.unwrap();
    assert_eq!(annotations[INDEX_VERSION_ANNOTATION], "v1");
    assert_ne!(
        annotations[CONFIG_HASH_ANNOTATION],
        before.metadata.unwrap().annotations.unwrap()[CONFIG_HASH_ANNOTATION]
    );
    assert!(conditions::is_true(&next.status.conditions, "Progressing"));
    assert!(
        next.prune_configs.is_none(),
        "old pods still read the old ConfigMap"
    );
}

#[test]
fn a_new_version_rolls_pods_and_is_served_once_they_are_ready() {
    let r = route();
    let first = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let running = rolled(&first.deployment, 2);
    let mut served = r.clone();
    served.status = Some(plan_over(&r, Some(active_corpus("v1")), Some(running.clone())).status);
    let next = plan_over(&served, Some(active_corpus("v2")), Some(running));
    let objects = next.objects.unwrap();
    assert_eq!(route::template_version(&objects.deployment), Some("v2"));
    // Still v1 until the new pods are ready.
    assert_eq!(next.status.served_version.as_deref(), Some("v1"));
    let mut rolling = objects.deployment.clone();
    rolling.metadata.generation = Some(2);
    rolling.status = Some(DeploymentStatus {
        observed_generation: Some(2),
        replicas: Some(3),
        updated_replicas: Some(1),
        ready_replicas: Some(2),
        available_replicas: Some(2),
        ..Default::default()
    });
    let mid = plan_over(&served, Some(active_corpus("v2")), Some(rolling));
    assert_eq!(mid.status.served_version.as_deref(), Some("v1"));
    assert!(conditions::is_true(&mid.status.conditions, "Progressing"));
    let done = plan_over(
        &served,
        Some(active_corpus("v2")),
        Some(rolled(&objects.deployment, 2)),
    );
    assert_eq!(done.status.served_version.as_deref(), Some("v2"));
    assert!(
        done.events
            .iter()
            .any(|e| e.reason == "ServedVersionChanged" && e.message.contains("v2"))
    );
    assert!(done.prune_configs.is_some());

    // A rollout the Deployment gave up on says so, as the Deployment does.
    let mut stuck = objects.deployment.clone();
    stuck.metadata.generation = Some(2);
    stuck.status = Some(DeploymentStatus {
        observed_generation: Some(2),
        replicas: Some(3),
        updated_replicas: Some(1),
        ready_replicas: Some(2),
        available_replicas: Some(2),
        conditions: Some(vec![DeploymentCondition {
            type_: "Progressing".into(),
            status: "False".into(),
            reason: Some("ProgressDeadlineExceeded".into()),
            message: Some("ReplicaSet has timed out progressing.".into()),
            ..Default::default()
        }]),
        ..Default::default()
    });
    let stalled = plan_over(&served, Some(active_corpus("v2")), Some(stuck));
    let progressing = conditions::get(&stalled.status.conditions, "Progressing").unwrap();
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_str()),
        ("False", "ProgressDeadlineExceeded")
    );
    assert!(progressing.message.contains("timed out"));
    assert_eq!(stalled.status.served_version.as_deref(), Some("v1"));

    // kstatus: reconciling mid-rollout, ready once done, stalled when
    // stuck (and a stuck rollout is never Ready, though pods serve).
    let kstatus = |plan: &route::Plan| {
        let c = &plan.status.conditions;
        (
            conditions::get(c, "Ready").map(|c| c.status.clone()),
            conditions::is_true(c, "Reconciling"),
            conditions::is_true(c, "Stalled"),
        )
    };
    assert_eq!(kstatus(&mid), (Some("False".into()), true, false));
    assert_eq!(kstatus(&done), (Some("True".into()), false, false));
    assert_eq!(kstatus(&stalled), (Some("False".into()), false, true));
    let ready = conditions::get(&stalled.status.conditions, "Ready").unwrap();
    assert_eq!(ready.reason, "ProgressDeadlineExceeded");
    assert!(
        stalled
            .events
            .iter()
            .any(|e| e.warning && e.reason == "ProgressDeadlineExceeded")
    );
}

#[test]
fn a_route_waits_for_its_corpus() {
    let r = route();
    let none = route_plan(&r, &route::Observed::default());
    assert!(none.objects.is_none());
    let available = conditions::get(&none.status.conditions, "Available").unwrap();
    assert_eq!(available.reason, "CorpusNotFound");
    let unbuilt = plan_over(&r, Some(corpus()), None);
    assert!(unbuilt.objects.is_none());
    let progressing = conditions::get(&unbuilt.status.conditions, "Progressing").unwrap();
    assert_eq!(progressing.reason, "WaitingForIndex");
}

#[test]
fn a_route_whose_corpus_cannot_be_read_keeps_its_pods() {
    let r = route();
    let serving = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let running = rolled(&serving.deployment, 2);
    let plan = route_plan(
        &r,
        &route::Observed {
            corpus_unreadable: Some("spec.ingest.shards: invalid type".into()),
            corpus: None,
            deployment: Some(running),
            ..Default::default()
        },
    );
    assert!(plan.objects.is_none(), "nothing is applied");
    let progressing = conditions::get(&plan.status.conditions, "Progressing").unwrap();
    assert_eq!(progressing.reason, "CorpusInvalid");
    assert!(progressing.message.contains("spec.ingest.shards"));
}

#[test]
fn a_route_holds_its_pods_until_a_version_this_build_reads_is_published() {
    let r = route();
    let serving = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let running = rolled(&serving.deployment, 2);
    for (format, said) in [
        (None, "earlier release"),
        (Some(crate::index::FORMAT_VERSION + 1), "format"),
    ] {
        let mut corpus = active_corpus("v1");
        if let Some(active) = corpus.status.as_mut().and_then(|s| s.active_index.as_mut()) {
            active.format = format;
        }
        let held = plan_over(&r, Some(corpus.clone()), Some(running.clone()));
        assert!(held.objects.is_none(), "{format:?}: nothing is applied");
        let progressing = conditions::get(&held.status.conditions, "Progressing").unwrap();
        assert_eq!(progressing.reason, "AwaitingReindex");
        assert!(
            progressing.message.contains(said),
            "{}",
            progressing.message
        );
        assert_eq!(held.status.served_version.as_deref(), Some("v1"));
        let fresh = plan_over(&r, Some(corpus), None);
        assert!(fresh.objects.is_none());
        let available = conditions::get(&fresh.status.conditions, "Available").unwrap();
        assert_eq!(available.reason, "AwaitingReindex");
    }
}

#[test]
fn a_route_waiting_on_a_reindex_that_failed_is_stalled_not_progressing() {
    let r = route();
    let serving = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let running = rolled(&serving.deployment, 2);
    let mut corpus = active_corpus("v1");
    let status = corpus.status.as_mut().unwrap();
    if let Some(active) = status.active_index.as_mut() {
        active.format = Some(crate::index::FORMAT_VERSION + 1);
    }
    status.pending_index = Some(crate::spec::IndexVersionStatus {
        version: "v2".into(),
        error: Some("source manuals: no such directory".into()),
        ..Default::default()
    });
    let stuck = plan_over(&r, Some(corpus), Some(running));
    assert!(stuck.objects.is_none(), "nothing is applied");
    let progressing = conditions::get(&stuck.status.conditions, "Progressing").unwrap();
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_str()),
        ("False", "ReindexFailed")
    );
    assert!(
        progressing.message.contains("no such directory"),
        "{}",
        progressing.message
    );
    let stalled = conditions::get(&stuck.status.conditions, "Stalled").unwrap();
    assert_eq!(stalled.reason, "ReindexFailed");
    // The pods it runs still serve the version they have.
    assert_eq!(stuck.status.served_version.as_deref(), Some("v1"));
}

#[test]
fn a_rotated_secret_rolls_the_route_pods() {
    let mut r = route();
    r.spec.serving.token_secret = Some("qa-tokens".into());
    let corpus = active_corpus("v1");
    let names = deployment::secret_names(&r, &corpus, &settings());
    assert!(names.contains(&"qa-tokens".to_string()), "{names:?}");
    let observed = |version: &str, deployment: Option<Deployment>| route::Observed {
        corpus: Some(corpus.clone()),
        deployment,
        secret_versions: names
            .iter()
            .map(|n| (n.clone(), version.to_string()))
            .collect(),
        ..Default::default()
    };
    let first = route_plan(&r, &observed("100", None)).objects.unwrap();
    let running = rolled(&first.deployment, 2);
    let mut served = r.clone();
    served.status = Some(route_plan(&r, &observed("100", Some(running.clone()))).status);

    let same = route_plan(&served, &observed("100", Some(running.clone())));
    assert!(!conditions::is_true(&same.status.conditions, "Progressing"));

    let rotated = route_plan(&served, &observed("101", Some(running)));
    let progressing = conditions::get(&rotated.status.conditions, "Progressing").unwrap();
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_str()),
        ("True", "NewTemplate")
    );
    assert!(
        progressing.message.contains("Secret"),
        "{}",
        progressing.message
    );
    let stamp =
        |d: &Deployment| route::template_annotation(d, SECRETS_ANNOTATION).map(String::from);
    assert_ne!(
        stamp(&rotated.objects.unwrap().deployment),
        stamp(&first.deployment)
    );
}

#[test]
fn a_generator_key_reaches_the_route_pods_its_address_the_policy_and_its_state_the_status() {
    let mut r = route();
    r.spec.generation = crate::spec::GenerationSpec {
        provider: crate::spec::GenerationProvider::Openai,
        model: "gpt-4o-mini".into(),
        endpoint: Some("http://169.254.10.20:8000/v1".into()),
        api_key_secret_ref: Some(crate::spec::SecretKeyRef {
            name: "llm".into(),
            key: "api-key".into(),
        }),
        ..Default::default()
    };
    let corpus = active_corpus("v1");
    assert!(deployment::secret_names(&r, &corpus, &settings()).contains(&"llm".to_string()));
    let observed = route::Observed {
        corpus: Some(corpus.clone()),
        generator: Some(Err(
            "http://169.254.10.20:8000/v1: connection refused".into()
        )),
        ..Default::default()
    };
    let plan = route_plan(&r, &observed);
    // Down: said, and not held against the route's readiness.
    let reachable = plan
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "GeneratorReachable")
        .expect("the generator's condition");
    assert_eq!(
        (reachable.status.as_str(), reachable.reason.as_str()),
        ("False", "GeneratorUnreachable")
    );
    assert!(reachable.message.contains("connection refused"));
    let objects = plan.objects.unwrap();
    let pod = objects.deployment.spec.unwrap().template.spec.unwrap();
    assert!(deployment::referenced_secrets(&pod).contains(&"llm".to_string()));
    // A link-local address, which the policy otherwise closes, is opened
    // to the generator alone, on its port.
    let egress = objects
        .network_policy
        .unwrap()
        .spec
        .unwrap()
        .egress
        .unwrap();
    let opened = egress.iter().any(|rule| {
        let to = rule.to.iter().flatten().filter_map(|p| p.ip_block.as_ref());
        let port = rule.ports.iter().flatten().filter_map(|p| p.port.clone());
        to.map(|b| b.cidr.as_str()).eq(["169.254.10.20/32"])
            && port.eq([k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(8000)])
    });
    assert!(opened, "{egress:?}");

    // Extractive: no condition, no key.
    let mut plain = r.clone();
    plain.spec.generation = Default::default();
    let plan = route_plan(
        &plain,
        &route::Observed {
            corpus: Some(corpus.clone()),
            ..Default::default()
        },
    );
    assert!(
        plan.status
            .conditions
            .iter()
            .all(|c| c.type_ != "GeneratorReachable")
    );
    assert!(!deployment::secret_names(&plain, &corpus, &settings()).contains(&"llm".to_string()));

    // An extractive route that names a model is refused, not rolled out.
    plain.spec.generation.model = "gpt-4o-mini".into();
    let plan = route_plan(
        &plain,
        &route::Observed {
            corpus: Some(corpus),
            ..Default::default()
        },
    );
    assert!(plan.objects.is_none());
    let progressing = plan
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .unwrap();
    assert_eq!(progressing.reason, "InvalidSpec");
    assert!(
        progressing.message.contains("spec.generation.model"),
        "{}",
        progressing.message
    );
}

/// The start of a rollout is when the route's status says it began, and
/// there is none once every pod runs the template.
#[test]
fn a_rollout_under_way_reports_when_it_began() {
    let r = route();
    let first = plan_over(&r, Some(active_corpus("v1")), None);
    let began = |plan: &route::Plan| plan.rollout_began;
    // The first pods: a rollout from now (the plan's clock).
    let now = conditions::unix_seconds("2026-11-24T00:00:00Z").unwrap();
    assert_eq!(began(&first), Some(now));
    let objects = first.objects.unwrap();
    let running = rolled(&objects.deployment, 2);
    let mut served = r.clone();
    served.status = Some(plan_over(&r, Some(active_corpus("v1")), Some(running.clone())).status);
    assert_eq!(
        began(&plan_over(
            &served,
            Some(active_corpus("v1")),
            Some(running.clone())
        )),
        None,
        "every pod runs the template"
    );
    // A new version: under way from the Progressing transition the
    // status recorded, reconcile after reconcile.
    let mut rolling = served.clone();
    let mut status = plan_over(&served, Some(active_corpus("v2")), Some(running)).status;
    for c in &mut status.conditions {
        if c.type_ == "Progressing" {
            c.last_transition_time = Some("2026-11-23T23:00:00Z".into());
        }
    }
    rolling.status = Some(status);
    let next = plan_over(&rolling, Some(active_corpus("v2")), None).objects;
    let mut half = rolled(&next.unwrap().deployment, 2);
    half.status.as_mut().unwrap().updated_replicas = Some(1);
    assert_eq!(
        began(&plan_over(&rolling, Some(active_corpus("v2")), Some(half))),
        Some(now - 3600)
    );
    // A paused route reports none.
    let mut paused = rolling.clone();
    paused.metadata.annotations = Some(BTreeMap::from([(
        PAUSED_ANNOTATION.to_string(),
        "true".to_string(),
    )]));
    assert_eq!(
        began(&plan_over(&paused, Some(active_corpus("v2")), None)),
        None
    );
}

/// Past `maxConcurrentRollouts` a route whose pods would roll keeps them
/// as they are (nothing applied) and says why; a route's first pods and
/// one whose rollout is under way are not held.
#[test]
fn a_rollout_past_the_cap_keeps_the_pods_that_serve() {
    let r = route();
    let first = plan_over(&r, Some(active_corpus("v1")), None);
    let objects = first.objects.unwrap();
    let replicas = objects
        .deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap();
    let serving_v1 = rolled(&objects.deployment, replicas);
    let at = |rollouts_elsewhere: usize, deployment: Option<Deployment>| {
        route_plan(
            &r,
            &route::Observed {
                corpus: Some(active_corpus("v2")),
                deployment,
                rollouts_elsewhere,
                ..Default::default()
            },
        )
    };

    let held = at(2, Some(serving_v1.clone()));
    assert!(held.objects.is_none());
    assert!(held.prune_configs.is_none());
    let progressing = conditions::get(&held.status.conditions, "Progressing").unwrap();
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_str()),
        ("True", "RolloutQueued")
    );
    assert!(
        progressing.message.contains("maxConcurrentRollouts (2)")
            && progressing.message.contains("index version v2"),
        "{}",
        progressing.message
    );
    assert!(conditions::get(&held.status.conditions, "Stalled").is_none());
    assert_eq!(held.requeue, Some(Duration::from_secs(10)));
    assert_eq!(held.status.served_version.as_deref(), Some("v1"));

    let rolls = at(1, Some(serving_v1.clone()));
    assert_eq!(
        rolls
            .objects
            .as_ref()
            .and_then(|o| route::template_version(&o.deployment)),
        Some("v2")
    );
    // A route's first pods are no rollout of running ones.
    assert!(at(9, None).objects.is_some());
    // Rolling serving pods takes a turn; first pods and pods that already
    // run the template take none.
    assert!(held.needs_turn && rolls.needs_turn);
    assert!(!at(9, None).needs_turn);
    let served = rolled(&rolls.objects.unwrap().deployment, replicas);
    let steady = at(9, Some(served));
    assert!(steady.objects.is_some() && !steady.needs_turn);
}

/// When an autoscaler scales a route's Deployment, the operator applies
/// the replica count it finds instead of the route's.
#[test]
fn an_autoscaled_route_keeps_the_autoscalers_replicas() {
    let r = route();
    let objects = plan_over(&r, Some(active_corpus("v1")), None)
        .objects
        .unwrap();
    let mut scaled = rolled(&objects.deployment, 5);
    if let Some(spec) = scaled.spec.as_mut() {
        spec.replicas = Some(5);
    }
    scaled.metadata.resource_version = Some("rv-5".into());
    let observe = |autoscaler: Option<&str>| route::Observed {
        corpus: Some(active_corpus("v1")),
        deployment: Some(scaled.clone()),
        autoscaler: autoscaler.map(String::from),
        ..Default::default()
    };
    let replicas = |plan: &route::Plan| {
        plan.objects
            .as_ref()
            .and_then(|o| o.deployment.spec.as_ref())
            .and_then(|s| s.replicas)
    };
    let autoscaled = route_plan(&r, &observe(Some("handbook-qa")));
    assert_eq!(replicas(&autoscaled), Some(5));
    // The count is applied only over the Deployment it was read from.
    assert_eq!(
        autoscaled
            .objects
            .as_ref()
            .and_then(|o| o.deployment.metadata.resource_version.as_deref()),
        Some("rv-5")
    );
    // Without one the route's count is applied, over the Deployment as
    // read too: a count set between the read and the apply is planned
    // over again, not overwritten.
    let owned = route_plan(&r, &observe(None));
    assert_ne!(replicas(&owned), Some(5));
    assert_eq!(
        owned
            .objects
            .as_ref()
            .and_then(|o| o.deployment.metadata.resource_version.as_deref()),
        Some("rv-5")
    );
    // A Deployment not yet made has no version to hold the apply to.
    let fresh = plan_over(&r, Some(active_corpus("v1")), None);
    assert!(
        fresh
            .objects
            .and_then(|o| o.deployment.metadata.resource_version)
            .is_none()
    );
}
