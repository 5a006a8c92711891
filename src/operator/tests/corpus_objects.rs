//! The objects of an ingest: its Job and pods, what they mount, their
//! report Role, manifests and NetworkPolicy.

use super::*;

/// A new Corpus, its first plan and the names of that plan's objects.
fn first_ingest() -> (Corpus, corpus::Plan, ingest_job::Names) {
    let c = corpus();
    let plan = plan(&c, &with_profile());
    let names = ingest_job::Names::new(&c, &plan.inputs);
    (c, plan, names)
}

#[test]
fn an_ingest_job_runs_hardened_pods_owned_by_its_corpus() {
    let (_, plan, names) = first_ingest();
    let job = job_of(&plan).unwrap();
    let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("Corpus", "uid-corpus")
    );
    assert_eq!(owner.controller, Some(true));

    let spec = job.spec.as_ref().unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((spec.completions, spec.parallelism), (Some(1), Some(1)));
    assert_eq!(spec.backoff_limit, Some(2));
    assert_eq!(spec.active_deadline_seconds, Some(6 * 3600));
    assert_eq!(spec.ttl_seconds_after_finished, Some(3600));
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some(names.service_account.as_str())
    );
    let container = &pod.containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("registry.example/trellis:1.0")
    );
    let args = container.args.as_ref().unwrap().join(" ");
    assert!(
        args.contains(&format!(
            "ingest -f /etc/trellis/manifests --corpus handbook --data-dir /var/lib/trellis --report-configmap {} --inputs {}",
            names.report, plan.inputs
        )),
        "{args}"
    );
    assert!(!args.contains("--shard"), "{args}");
    let security = container.security_context.as_ref().unwrap();
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert_eq!(security.allow_privilege_escalation, Some(false));
    // No resources in the spec: the chart's requests, so never BestEffort.
    let requests = container.resources.as_ref().unwrap().requests.as_ref();
    assert_eq!(requests.unwrap()["cpu"].0, "750m");
}

#[test]
fn ingest_pods_mount_the_data_claim_and_their_sources() {
    let (_, plan, _) = first_ingest();
    let pod = job_of(&plan)
        .unwrap()
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap();
    let container = &pod.containers[0];
    // Of the data claim, the corpus' own versions and the embedding cache
    // read-write; the source claim read-only under the root the source
    // module reads.
    let mounts = container.volume_mounts.as_ref().unwrap();
    assert_eq!(
        data_mounts(container),
        [
            (
                Some("indexes/handbook"),
                "/var/lib/trellis/indexes/handbook",
                Some(false)
            ),
            (Some("cache"), "/var/lib/trellis/cache", Some(false)),
        ]
    );
    let env: Vec<&str> = container
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert!(env.contains(&"TRELLIS_POD_UID"), "{env:?}");
    let source = mounts.iter().find(|m| m.name == "source-0").unwrap();
    assert_eq!(
        (source.mount_path.as_str(), source.read_only),
        ("/var/run/trellis/pvc/contracts", Some(true))
    );
    let volumes = pod.volumes.as_ref().unwrap();
    let claim = volumes
        .iter()
        .find(|v| v.name == "data")
        .and_then(|v| v.persistent_volume_claim.as_ref())
        .unwrap();
    assert_eq!(claim.claim_name, "trellis-data");
}

#[test]
fn ingest_pods_may_write_their_report_and_nothing_else() {
    let (_, plan, names) = first_ingest();
    let role = plan
        .apply
        .iter()
        .find_map(|d| match d {
            Desired::Role(r) => Some(r),
            _ => None,
        })
        .unwrap();
    let rule = &role.rules.as_ref().unwrap()[0];
    assert_eq!(
        rule.resources.as_deref(),
        Some(&["configmaps".to_string()][..])
    );
    assert_eq!(
        rule.resource_names.as_deref(),
        Some(&[names.report.clone()][..])
    );
    assert!(!rule.verbs.contains(&"create".to_string()));
}

#[test]
fn the_rendered_manifests_read_back_as_the_same_resources() {
    let (c, plan, names) = first_ingest();
    let manifests = plan
        .apply
        .iter()
        .find_map(|d| match d {
            Desired::ConfigMap(cm)
                if cm.metadata.name.as_deref() == Some(names.inputs_config.as_str()) =>
            {
                cm.data.as_ref()?.get("manifests.yaml").cloned()
            }
            _ => None,
        })
        .unwrap();
    let loaded =
        crate::spec::parse_str(&manifests, std::path::Path::new("manifests.yaml")).unwrap();
    assert_eq!(loaded.len(), 2);
    assert_eq!(loaded[1].manifest.as_corpus().unwrap().spec, c.spec);
}

/// Evictions and preemptions do not use up the backoff limit; a pod that
/// found nothing to index fails its Job at once.
#[test]
fn ingest_jobs_ignore_disruptions_and_fail_at_once_on_nothing_to_index() {
    let plan = plan(&corpus(), &with_profile());
    let job = job_of(&plan).unwrap().spec.as_ref().unwrap();
    let policy = job.pod_failure_policy.clone().unwrap();
    let rule = &policy.rules[0];
    assert_eq!(rule.action, "Ignore");
    assert_eq!(
        rule.on_pod_conditions.as_ref().unwrap()[0].type_,
        "DisruptionTarget"
    );
    let rule = &policy.rules[1];
    assert_eq!(rule.action, "FailJob");
    let codes = rule.on_exit_codes.as_ref().unwrap();
    let container = &job.template.spec.as_ref().unwrap().containers[0].name;
    assert_eq!(codes.container_name.as_ref(), Some(container));
    assert_eq!(
        (codes.operator.as_str(), codes.values.as_slice()),
        (
            "In",
            [i32::from(report::NOTHING_INDEXED_EXIT_CODE)].as_slice()
        )
    );
}

#[test]
fn the_graph_store_password_secret_is_mounted_into_ingest_pods() {
    let mut observed = with_profile();
    let profile = observed.profile.as_mut().unwrap();
    profile.spec.graph = serde_json::from_value(serde_json::json!({
        "store": "falkordb",
        "falkordb": {
            "url": "falkor://falkordb.graph:6379",
            "passwordSecretRef": {"name": "falkordb-auth"}
        }
    }))
    .unwrap();
    let p = plan(&corpus(), &observed);
    let job = job_of(&p).expect("an ingest Job");
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let secret = pod
        .volumes
        .iter()
        .flatten()
        .find_map(|v| v.secret.as_ref())
        .expect("the password Secret as a volume");
    assert_eq!(secret.secret_name.as_deref(), Some("falkordb-auth"));
    let mounts = mount_paths(&pod.containers[0]);
    assert!(
        mounts.contains(&"/var/run/trellis/secrets/falkordb-auth"),
        "{mounts:?}"
    );
}

#[test]
fn config_map_and_s3_sources_are_mounted_into_ingest_pods_and_edits_are_new_inputs() {
    let mut c = corpus();
    c.spec.sources = serde_json::from_value(serde_json::json!([
        {"configMap": {"name": "faq"}},
        {"s3": {"bucket": "b", "credentialsSecret": {"name": "s3-creds"}}},
        {"http": {"urls": ["https://docs.example.com/a.md"]}},
    ]))
    .unwrap();
    let mut observed = with_profile();
    observed
        .source_config_maps
        .insert("faq".into(), "101".into());
    let p = plan(&c, &observed);
    let job = job_of(&p).expect("an ingest Job");
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let volumes = pod.volumes.as_ref().unwrap();
    let faq = volumes
        .iter()
        .find_map(|v| v.config_map.as_ref().filter(|c| c.name == "faq"))
        .expect("the source ConfigMap as a volume");
    assert_eq!(faq.optional, Some(true));
    let secret = volumes
        .iter()
        .find_map(|v| v.secret.as_ref())
        .expect("the credentials Secret as a volume");
    assert_eq!(secret.secret_name.as_deref(), Some("s3-creds"));
    let container = &pod.containers[0];
    let mounts = mount_paths(container);
    assert!(
        mounts.contains(&"/var/run/trellis/configmaps/faq"),
        "{mounts:?}"
    );
    assert!(
        mounts.contains(&"/var/run/trellis/secrets/s3-creds"),
        "{mounts:?}"
    );
    let env: Vec<&str> = container
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert!(env.contains(&"TRELLIS_CONFIGMAP_ROOT") && env.contains(&"TRELLIS_SECRET_ROOT"));

    // An edit to the ConfigMap (a new resource version) is a new ingest.
    let mut edited = observed.clone();
    edited.source_config_maps.insert("faq".into(), "102".into());
    assert_ne!(plan(&c, &edited).inputs, p.inputs);
    assert_eq!(ingest_job::source_config_map_names(&c), ["faq"]);
}

/// Ingest pods are fenced: nothing in, nothing out to link-local
/// addresses (cloud metadata), unless an s3 source runs on ambient
/// credentials, which an instance role serves from there.
#[test]
fn ingest_pods_get_a_policy_that_keeps_them_from_cloud_metadata() {
    let policy_of = |c: &Corpus| {
        plan(c, &with_profile())
            .apply
            .into_iter()
            .find_map(|d| match d {
                Desired::NetworkPolicy(p) => Some(p),
                _ => None,
            })
            .unwrap()
    };
    let c = corpus();
    let policy = policy_of(&c);
    let spec = policy.spec.as_ref().unwrap();
    let job = job_of(&plan(&c, &with_profile())).unwrap().clone();
    let pod_labels = job.spec.unwrap().template.metadata.unwrap().labels.unwrap();
    let selector = spec
        .pod_selector
        .as_ref()
        .unwrap()
        .match_labels
        .clone()
        .unwrap();
    assert!(
        selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v)),
        "{selector:?}"
    );
    assert_eq!(spec.ingress.as_deref(), Some(&[][..]));
    let egress = serde_json::to_string(&spec.egress).unwrap();
    assert!(
        egress.contains("169.254.0.0/16") && egress.contains("fe80::/10"),
        "{egress}"
    );

    let mut ambient = corpus();
    ambient.spec.sources = serde_json::from_value(serde_json::json!([
        {"s3": {"bucket": "b", "ambientCredentials": true}}
    ]))
    .unwrap();
    let open = policy_of(&ambient);
    let egress = serde_json::to_string(&open.spec.unwrap().egress).unwrap();
    assert!(!egress.contains("169.254.0.0/16"), "{egress}");
}
