//! The reconcilers against a mocked Kubernetes API (tower-test): a small
//! in-memory API server that answers reads from a store, records every
//! write, and keeps what was applied, so each test checks the calls a
//! reconcile makes and the status it writes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};

use trellis::operator::checked::Checked;
use trellis::operator::controller::{self, Context};
use trellis::operator::corpus;
use trellis::operator::ingest_job::Names;
use trellis::operator::report;
use trellis::operator::telemetry::Metrics;
use trellis::operator::{Settings, deployment};
use trellis::spec::{Corpus, IndexProfile, IndexProfileSpec, RetrievalRoute, RetrievalRouteSpec};

const NS: &str = "docs";
const NOW: u64 = 1_800_000_000;

/// One request the reconciler made.
#[derive(Clone, Debug)]
struct Call {
    method: Method,
    path: String,
    query: String,
    body: Value,
}

/// The mocked API server's state.
#[derive(Clone, Default)]
struct FakeApi {
    objects: Arc<Mutex<HashMap<String, Value>>>,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl FakeApi {
    fn put(&self, path: &str, object: Value) {
        self.objects
            .lock()
            .unwrap()
            .insert(path.to_string(), object);
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    fn writes(&self) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method != Method::GET)
            .collect()
    }

    /// The applies (server-side) made, as (kind, name).
    fn applied(&self) -> Vec<(String, String)> {
        self.calls()
            .into_iter()
            .filter(|c| {
                c.method == Method::PATCH
                    && c.query.contains("fieldManager=trellis-operator")
                    && !c.path.ends_with("/status")
            })
            .map(|c| {
                (
                    c.body["kind"].as_str().unwrap_or_default().to_string(),
                    c.body["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect()
    }

    /// The last status written to `path`.
    fn status(&self, path: &str) -> Value {
        self.calls()
            .into_iter()
            .rev()
            .find(|c| c.method == Method::PATCH && c.path == format!("{path}/status"))
            .map(|c| c.body["status"].clone())
            .unwrap_or(Value::Null)
    }

    fn events(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == Method::POST && c.path.ends_with("/events"))
            .map(|c| c.body["reason"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn answer(
        &self,
        method: &Method,
        path: &str,
        query: &str,
        body: &Value,
    ) -> (StatusCode, Value) {
        let mut objects = self.objects.lock().unwrap();
        match *method {
            Method::GET => match objects.get(path) {
                Some(object) => (StatusCode::OK, object.clone()),
                // A collection: `…/namespaces/NS/PLURAL`.
                None if path
                    .rsplit_once('/')
                    .is_some_and(|(parent, _)| parent.ends_with(&format!("namespaces/{NS}"))) =>
                {
                    let prefix = format!("{path}/");
                    let items: Vec<Value> = objects
                        .iter()
                        .filter(|(key, _)| {
                            key.strip_prefix(&prefix).is_some_and(|n| !n.contains('/'))
                        })
                        .map(|(_, object)| object.clone())
                        .collect();
                    (
                        StatusCode::OK,
                        json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}),
                    )
                }
                // A collection over every namespace: `…/PLURAL`.
                None if !path.contains("/namespaces/") => {
                    let (group, plural) = path.rsplit_once('/').unwrap_or_default();
                    let prefix = format!("{group}/namespaces/");
                    let items: Vec<Value> = objects
                        .iter()
                        .filter(|(key, _)| {
                            key.strip_prefix(&prefix).is_some_and(|rest| {
                                let parts: Vec<&str> = rest.split('/').collect();
                                parts.len() == 3 && parts[1] == plural
                            })
                        })
                        .map(|(_, object)| object.clone())
                        .collect();
                    (
                        StatusCode::OK,
                        json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}),
                    )
                }
                None => (StatusCode::NOT_FOUND, not_found(path)),
            },
            Method::PATCH if path.ends_with("/status") => {
                let key = path.trim_end_matches("/status");
                // The reconciled object exists in a real cluster; here it
                // may not have been stored.
                let name = key.rsplit('/').next().unwrap_or_default();
                let mut object = objects
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| json!({"metadata": {"name": name, "namespace": NS}}));
                object["status"] = body["status"].clone();
                objects.insert(key.to_string(), object.clone());
                (StatusCode::OK, object)
            }
            Method::PATCH if query.contains("fieldManager=") => {
                let mut object = body.clone();
                object["metadata"]["uid"] = json!(format!("uid-{}", path.len()));
                object["metadata"]["namespace"] = json!(NS);
                objects.insert(path.to_string(), object.clone());
                (StatusCode::OK, object)
            }
            Method::PATCH => match objects.get_mut(path) {
                Some(object) => {
                    json_merge(object, body);
                    (StatusCode::OK, object.clone())
                }
                None => (StatusCode::NOT_FOUND, not_found(path)),
            },
            Method::DELETE => {
                // A collection (a label selector) or one object.
                if query.contains("labelSelector") {
                    (
                        StatusCode::OK,
                        json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": []}),
                    )
                } else {
                    objects.remove(path);
                    (
                        StatusCode::OK,
                        json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Success"}),
                    )
                }
            }
            Method::POST => (StatusCode::CREATED, body.clone()),
            _ => (StatusCode::METHOD_NOT_ALLOWED, json!({})),
        }
    }
}

fn json_merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    json_merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

fn not_found(path: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "message": format!("{path} not found"), "reason": "NotFound", "code": 404
    })
}

/// A client whose requests the returned FakeApi answers.
fn mocked() -> (kube::Client, FakeApi) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let api = FakeApi::default();
    let server = api.clone();
    tokio::spawn(async move {
        while let Some((request, send)) = handle.next_request().await {
            let method = request.method().clone();
            let path = request.uri().path().to_string();
            let query = request.uri().query().unwrap_or_default().to_string();
            let bytes = request
                .into_body()
                .collect_bytes()
                .await
                .unwrap_or_default();
            let body: Value = serde_json::from_slice(&bytes)
                .or_else(|_| serde_yaml::from_slice(&bytes))
                .unwrap_or(Value::Null);
            server.calls.lock().unwrap().push(Call {
                method: method.clone(),
                path: path.clone(),
                query: query.clone(),
                body: body.clone(),
            });
            let (status, answer) = server.answer(&method, &path, &query, &body);
            send.send_response(
                Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(Body::from(serde_json::to_vec(&answer).unwrap()))
                    .unwrap(),
            );
        }
    });
    (kube::Client::new(service, NS), api)
}

fn context(client: kube::Client) -> Arc<Context> {
    let mut ctx = Context::new(
        client,
        Settings {
            image: "registry.example/trellis:1.0".into(),
            image_pull_policy: "IfNotPresent".into(),
            image_pull_secrets: Vec::new(),
            network_policy: false,
            ..Settings::default()
        },
        Metrics::new(),
    );
    ctx.clock = || NOW;
    Arc::new(ctx)
}

fn profile() -> IndexProfile {
    let mut p = IndexProfile::new("default", IndexProfileSpec::default());
    p.metadata.namespace = Some(NS.into());
    p.metadata.uid = Some("uid-profile".into());
    p
}

fn corpus() -> Corpus {
    let mut c: Corpus = serde_json::from_value(json!({
        "apiVersion": "trellis.dev/v1alpha1",
        "kind": "Corpus",
        "metadata": {"name": "handbook", "namespace": NS, "uid": "uid-corpus", "generation": 1},
        "spec": {
            "profileRef": {"name": "default"},
            "sources": [{"pvc": {"claimName": "manuals"}}],
        },
    }))
    .unwrap();
    c.status = None;
    c
}

const PROFILE_PATH: &str = "/apis/trellis.dev/v1alpha1/namespaces/docs/indexprofiles/default";
const CORPUS_PATH: &str = "/apis/trellis.dev/v1alpha1/namespaces/docs/corpora/handbook";

fn job_path(name: &str) -> String {
    format!("/apis/batch/v1/namespaces/{NS}/jobs/{name}")
}

fn config_map_path(name: &str) -> String {
    format!("/api/v1/namespaces/{NS}/configmaps/{name}")
}

fn job(succeeded: bool) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x", "namespace": NS},
        "status": {"conditions": [{
            "type": if succeeded { "Complete" } else { "Failed" },
            "status": "True",
            "reason": if succeeded { "Completed" } else { "DeadlineExceeded" },
            "message": if succeeded { "" } else { "Job was active longer than specified deadline" },
        }]}
    })
}

fn report(inputs: &str, version: &str) -> Value {
    let status = trellis::spec::IndexVersionStatus {
        version: version.into(),
        profile_hash: Some(trellis::ingest::profile_hash(&IndexProfileSpec::default())),
        format: Some(trellis::index::FORMAT_VERSION),
        documents: 3,
        sentences: 120,
        chunks: 9,
        edges: 30,
        ..Default::default()
    };
    json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "r", "namespace": NS},
        "data": report::report_data(inputs, Ok(&status)),
    })
}

fn inputs_of(corpus: &Corpus) -> String {
    corpus::inputs_hash(corpus, &profile(), &Default::default(), NOW)
}

#[tokio::test]
async fn a_new_corpus_gets_its_ingest_job() {
    let (client, api) = mocked();
    api.put(PROFILE_PATH, serde_json::to_value(profile()).unwrap());
    api.put(
        &job_path("handbook-ingest-old"),
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "handbook-ingest-old", "namespace": NS, "labels": {
                "trellis.dev/corpus": "handbook",
                "trellis.dev/inputs": "old",
                "trellis.dev/content": "other",
            }},
        }),
    );
    let c = corpus();
    let names = Names::new(&c, &inputs_of(&c));
    api.put(CORPUS_PATH, serde_json::to_value(&c).unwrap());
    controller::reconcile_corpus(Arc::new(c), context(client))
        .await
        .unwrap();

    let applied = api.applied();
    let kinds: Vec<&str> = applied.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "ConfigMap",
            "ConfigMap",
            "Job"
        ]
    );
    assert!(applied.contains(&("Job".into(), names.ingest_job.clone())));
    // Applied with apiVersion and kind, as server-side apply requires.
    let job = api
        .calls()
        .into_iter()
        .find(|c| c.path == job_path(&names.ingest_job) && c.method == Method::PATCH)
        .unwrap();
    assert_eq!(job.body["apiVersion"], "batch/v1");
    assert!(job.query.contains("force=true"), "{}", job.query);
    // A superseded ingest of the same corpus (other content) is removed.
    let deletes: Vec<String> = api
        .writes()
        .into_iter()
        .filter(|c| c.method == Method::DELETE)
        .map(|c| c.path)
        .collect();
    assert_eq!(deletes, [job_path("handbook-ingest-old")]);
    let listed = api
        .calls()
        .into_iter()
        .find(|c| c.method == Method::GET && c.path.ends_with("/jobs"))
        .unwrap();
    assert!(listed.query.contains("labelSelector"), "{}", listed.query);

    let status = api.status(CORPUS_PATH);
    assert_eq!(status["phase"], "Ingesting");
    assert_eq!(status["pendingIndex"]["job"], names.ingest_job.as_str());
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(api.events(), ["IngestStarted"]);
}

#[tokio::test]
async fn a_finished_job_and_its_report_make_the_corpus_ready() {
    let (client, api) = mocked();
    api.put(PROFILE_PATH, serde_json::to_value(profile()).unwrap());
    let c = corpus();
    let inputs = inputs_of(&c);
    let names = Names::new(&c, &inputs);
    api.put(&job_path(&names.ingest_job), job(true));
    api.put(&config_map_path(&names.report), report(&inputs, "0123abcd"));
    api.put(CORPUS_PATH, serde_json::to_value(&c).unwrap());
    controller::reconcile_corpus(Arc::new(c), context(client))
        .await
        .unwrap();

    assert!(api.applied().is_empty(), "{:?}", api.applied());
    let status = api.status(CORPUS_PATH);
    assert_eq!(status["phase"], "Ready");
    assert_eq!(status["activeIndex"]["version"], "0123abcd");
    assert_eq!(status["activeIndex"]["sentences"], 120);
    assert_eq!(status["activeIndex"]["inputs"], inputs.as_str());
    let ready = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    assert_eq!(ready["status"], "True");
    // The inputs of earlier ingests are cleaned up.
    let prune = api
        .writes()
        .into_iter()
        .find(|c| c.method == Method::DELETE && c.path.ends_with("/configmaps"))
        .unwrap();
    assert!(prune.query.contains("inputs"), "{}", prune.query);
    assert_eq!(api.events(), ["IndexPublished"]);
}

#[tokio::test]
async fn a_failed_job_sets_ready_false_with_its_reason() {
    let (client, api) = mocked();
    api.put(PROFILE_PATH, serde_json::to_value(profile()).unwrap());
    let c = corpus();
    let names = Names::new(&c, &inputs_of(&c));
    api.put(&job_path(&names.ingest_job), job(false));
    api.put(CORPUS_PATH, serde_json::to_value(&c).unwrap());
    controller::reconcile_corpus(Arc::new(c), context(client))
        .await
        .unwrap();
    assert!(api.applied().is_empty());
    let status = api.status(CORPUS_PATH);
    let ready = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "IngestFailed");
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("DeadlineExceeded"),
        "{ready}"
    );
    assert_eq!(api.events(), ["IngestFailed"]);
}

#[tokio::test]
async fn a_profile_change_starts_a_new_job_while_the_old_version_serves() {
    let (client, api) = mocked();
    let mut c = corpus();
    let old_inputs = inputs_of(&c);
    c.status = Some(trellis::spec::CorpusStatus {
        phase: Some("Ready".into()),
        active_index: Some(trellis::spec::IndexVersionStatus {
            version: "old".into(),
            inputs: Some(old_inputs.clone()),
            ..Default::default()
        }),
        ..Default::default()
    });
    let mut changed = profile();
    changed.spec.index.hnsw_m = 24;
    api.put(PROFILE_PATH, serde_json::to_value(&changed).unwrap());
    let new_inputs = corpus::inputs_hash(&c, &changed, &Default::default(), NOW);
    assert_ne!(new_inputs, old_inputs);
    api.put(CORPUS_PATH, serde_json::to_value(&c).unwrap());
    // A paused route still serves an older version; another corpus' route
    // serves a version of its own.
    for (name, corpus, served) in [("qa", "handbook", "older"), ("other", "wiki", "theirs")] {
        let mut route = RetrievalRoute::new(name, RetrievalRouteSpec::for_corpus(corpus));
        route.metadata.namespace = Some(NS.into());
        route.status = Some(trellis::spec::RetrievalRouteStatus {
            served_version: Some(served.into()),
            ..Default::default()
        });
        api.put(
            &format!("/apis/trellis.dev/v1alpha1/namespaces/{NS}/retrievalroutes/{name}"),
            serde_json::to_value(&route).unwrap(),
        );
    }
    controller::reconcile_corpus(Arc::new(c.clone()), context(client))
        .await
        .unwrap();
    let new_job = Names::new(&c, &new_inputs).ingest_job;
    assert!(api.applied().contains(&("Job".into(), new_job.clone())));
    // The ingest keeps what this corpus' routes serve and roll to,
    // whatever retainVersions says.
    let job = api
        .calls()
        .into_iter()
        .find(|c| c.path == job_path(&new_job) && c.method == Method::PATCH)
        .unwrap();
    let args: Vec<&str> = job.body["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let kept: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "--keep-version")
        .map(|w| w[1])
        .collect();
    assert_eq!(kept, ["old", "older"], "{args:?}");
    let status = api.status(CORPUS_PATH);
    assert_eq!(status["activeIndex"]["version"], "old");
    assert_eq!(status["phase"], "Ingesting");
    let ready = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["status"], "True", "the old version keeps serving");
}

#[tokio::test]
async fn a_paused_corpus_only_says_so() {
    let (client, api) = mocked();
    api.put(PROFILE_PATH, serde_json::to_value(profile()).unwrap());
    let mut c = corpus();
    c.metadata.annotations = Some([("trellis.dev/paused".to_string(), "true".to_string())].into());
    api.put(CORPUS_PATH, serde_json::to_value(&c).unwrap());
    controller::reconcile_corpus(Arc::new(c), context(client))
        .await
        .unwrap();
    let writes: Vec<Call> = api
        .writes()
        .into_iter()
        .filter(|c| !c.path.ends_with("/events"))
        .collect();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0].path, format!("{CORPUS_PATH}/status"));
    assert_eq!(api.events(), ["PausedByAnnotation"]);
    let paused = &api.status(CORPUS_PATH)["conditions"][0];
    assert_eq!(
        (paused["type"].as_str(), paused["status"].as_str()),
        (Some("Paused"), Some("True"))
    );
    // Nothing about its ingest was even read.
    assert!(api.calls().iter().all(|c| !c.path.contains("/jobs")));
}

#[tokio::test]
async fn a_deleted_corpus_is_left_to_owner_references() {
    let (client, api) = mocked();
    let mut c = corpus();
    c.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::from_second(NOW as i64).unwrap(),
    ));
    api.put(CORPUS_PATH, serde_json::to_value(&c).unwrap());
    controller::reconcile_corpus(Arc::new(c), context(client))
        .await
        .unwrap();
    // No finalizer: the Jobs, ConfigMaps and RBAC objects it owns go with
    // it through garbage collection, and no call can wedge its deletion.
    assert!(api.calls().is_empty(), "{:?}", api.calls());
}

#[tokio::test]
async fn a_route_deploys_its_pods_over_the_active_version() {
    let (client, api) = mocked();
    let mut c = corpus();
    c.status = Some(trellis::spec::CorpusStatus {
        active_index: Some(trellis::spec::IndexVersionStatus {
            version: "v7".into(),
            format: Some(trellis::index::FORMAT_VERSION),
            ..Default::default()
        }),
        ..Default::default()
    });
    api.put(CORPUS_PATH, serde_json::to_value(&c).unwrap());
    let mut route = RetrievalRoute::new("qa", RetrievalRouteSpec::for_corpus("handbook"));
    route.metadata.namespace = Some(NS.into());
    route.metadata.uid = Some("uid-route".into());
    api.put(
        "/apis/trellis.dev/v1alpha1/namespaces/docs/retrievalroutes/qa",
        serde_json::to_value(&route).unwrap(),
    );
    controller::reconcile_route(Arc::new(route), context(client))
        .await
        .unwrap();
    let kinds: Vec<String> = api.applied().into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        ["ConfigMap", "Deployment", "Service", "PodDisruptionBudget"]
    );
    let deployment = api
        .calls()
        .into_iter()
        .find(|c| c.body["kind"] == "Deployment")
        .unwrap();
    assert_eq!(
        deployment.body["spec"]["template"]["metadata"]["annotations"]["trellis.dev/index-version"],
        "v7"
    );
    assert_eq!(
        deployment.path,
        format!(
            "/apis/apps/v1/namespaces/{NS}/deployments/{}",
            deployment::workload_name("qa")
        )
    );
    let status = api.status("/apis/trellis.dev/v1alpha1/namespaces/docs/retrievalroutes/qa");
    let progressing = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Progressing")
        .unwrap()
        .clone();
    assert_eq!(progressing["status"], "True");
}

#[tokio::test]
async fn a_profile_gets_its_hash_and_validity() {
    let (client, api) = mocked();
    let p = profile();
    api.put(PROFILE_PATH, serde_json::to_value(&p).unwrap());
    controller::reconcile_profile(Arc::new(p), context(client))
        .await
        .unwrap();
    let status = api.status(PROFILE_PATH);
    assert_eq!(
        status["hash"],
        trellis::ingest::profile_hash(&IndexProfileSpec::default()).as_str()
    );
    assert_eq!(status["conditions"][0]["type"], "Valid");
    assert_eq!(status["conditions"][0]["status"], "True");
}

/// A Corpus that does not fit its type goes through the checked
/// reconciler: it is marked on itself (`InvalidSpec`, naming the field,
/// with a Warning) and nothing it owns is touched; once it reads, its own
/// reconcile runs and the mark goes. A reconcile that succeeds resets the
/// backoff of the failures before it.
#[tokio::test]
async fn an_unreadable_corpus_is_marked_on_itself_until_it_reads() {
    let (client, api) = mocked();
    let ctx = context(client);
    let mut raw = serde_json::to_value(corpus()).unwrap();
    raw["metadata"]["generation"] = json!(2);
    raw["spec"]["ingest"] = json!({"shards": "many"});
    api.put(CORPUS_PATH, raw.clone());
    let unreadable: Checked<Corpus> = serde_json::from_value(raw).unwrap();
    controller::reconcile(Arc::new(unreadable), ctx.clone())
        .await
        .unwrap();

    let writes = api.writes();
    assert!(
        writes
            .iter()
            .all(|c| c.path == format!("{CORPUS_PATH}/status") || c.path.ends_with("/events")),
        "{writes:?}"
    );
    let status = api.status(CORPUS_PATH);
    assert_eq!(status["observedGeneration"], 2);
    let conditions = status["conditions"].as_array().unwrap().clone();
    let ready = conditions.iter().find(|c| c["type"] == "Ready").unwrap();
    assert_eq!(
        (&ready["status"], &ready["reason"]),
        (&json!("False"), &json!(controller::INVALID_SPEC))
    );
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("spec.ingest.shards"),
        "{ready}"
    );
    assert!(api.events().contains(&controller::INVALID_SPEC.to_string()));

    // Mended, with the mark still on its status: the Corpus' own reconcile
    // (its profile is missing) writes a status without it.
    let mut mended = serde_json::to_value(corpus()).unwrap();
    mended["status"] = json!({"conditions": conditions});
    api.put(CORPUS_PATH, mended.clone());
    let readable = Arc::new(serde_json::from_value::<Checked<Corpus>>(mended).unwrap());
    // Two failures in a row wait 5 s, then 10 s; the reconcile that then
    // succeeds forgets them, so the next failure waits 5 s again.
    let failed = trellis::operator::Error::Render("a test's failure".into());
    let wait =
        |ctx: &Arc<Context>| controller::error_policy(readable.clone(), &failed, ctx.clone());
    assert_eq!(
        wait(&ctx),
        kube::runtime::controller::Action::requeue(controller::retry_after(1))
    );
    assert_eq!(
        wait(&ctx),
        kube::runtime::controller::Action::requeue(controller::retry_after(2))
    );
    controller::reconcile(readable.clone(), ctx.clone())
        .await
        .unwrap();
    assert_eq!(
        wait(&ctx),
        kube::runtime::controller::Action::requeue(controller::retry_after(1))
    );
    let status = api.status(CORPUS_PATH);
    let reasons: Vec<&str> = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["reason"].as_str())
        .collect();
    assert!(reasons.contains(&"ProfileNotFound"), "{reasons:?}");
    assert!(!reasons.contains(&controller::INVALID_SPEC), "{reasons:?}");
}
