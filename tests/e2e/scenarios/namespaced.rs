//! A namespaced install: the chart's `watchNamespace` naming two
//! namespaces gives the operator a Role in each and nothing cluster-wide,
//! and it reconciles there and nowhere else.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use kube::Api;
use kube::api::{DeleteParams, PostParams};

use super::chart::{helm_reuse, helm_rollback};
use super::corpus::{notice_corpus, put, ready_corpus, stage_notice};
use crate::support::{self, wait_for};
use crate::{OPERATOR_NAMESPACE, World};

const WATCHED: [&str; 2] = ["e2e-watched-a", "e2e-watched-b"];
const UNWATCHED: &str = "e2e-unwatched";
const CORPUS: &str = "notice";

/// Whether the operator's ServiceAccount may `verb` `resource` (in `ns`,
/// or across every namespace), as the API server's authorizer says.
async fn operator_may(
    world: &World,
    account: &str,
    verb: &str,
    group: &str,
    resource: &str,
    ns: Option<&str>,
) -> Result<bool> {
    let reviews: Api<SubjectAccessReview> = Api::all(world.cluster.admin.clone());
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(format!(
                "system:serviceaccount:{OPERATOR_NAMESPACE}:{account}"
            )),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                namespace: ns.map(String::from),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = reviews.create(&PostParams::default(), &review).await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// `watchNamespace` set to two namespaces (`helm upgrade --reuse-values`):
/// the ClusterRole goes and a Role takes its place in each of them; the
/// API server's authorizer lets the operator's ServiceAccount read Secrets
/// there and nowhere else, nor list Jobs across namespaces; a Corpus in a
/// watched namespace ingests, one beside it in another namespace is never
/// looked at. `helm rollback` restores the cluster-wide install, which
/// takes the other Corpus up.
pub async fn namespaced_install(world: &World) -> Result<()> {
    let client = &world.cluster.admin;
    for ns in WATCHED.iter().chain([&UNWATCHED]) {
        support::namespace(world, ns).await?;
    }
    let watch = format!("watchNamespace={}", WATCHED.join("\\,"));
    helm_reuse(world, &["--set-string", &watch]).await?;

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let operator = deployments.get("trellis").await?;
    let account = operator
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.service_account_name.clone())
        .context("the operator's pods name no ServiceAccount")?;
    let cluster_roles: Api<ClusterRole> = Api::all(client.clone());
    ensure!(
        cluster_roles.get_opt("trellis").await?.is_none(),
        "the namespaced install kept its ClusterRole"
    );
    for ns in WATCHED {
        let roles: Api<Role> = Api::namespaced(client.clone(), ns);
        ensure!(roles.get_opt("trellis").await?.is_some(), "no Role in {ns}");
        ensure!(
            operator_may(world, &account, "list", "", "secrets", Some(ns)).await?,
            "the operator may not list Secrets in {ns}, which it watches"
        );
    }
    ensure!(
        !operator_may(world, &account, "list", "", "secrets", Some(UNWATCHED)).await?,
        "the operator may list Secrets in {UNWATCHED}, which it does not watch"
    );
    ensure!(
        !operator_may(world, &account, "list", "batch", "jobs", None).await?,
        "the operator may list Jobs across every namespace"
    );

    for ns in [WATCHED[0], UNWATCHED] {
        stage_notice(world, ns).await?;
        put(world, ns, &notice_corpus(CORPUS)?).await?;
    }
    ready_corpus(world, WATCHED[0], CORPUS, None, Duration::from_secs(240)).await?;
    // Given the time its neighbour took, and some more: untouched.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let untouched = support::trellis_object(client, UNWATCHED, "corpora", CORPUS).await?;
    if !untouched["status"].is_null() {
        bail!(
            "the operator reconciled a Corpus in {UNWATCHED}: {}",
            untouched["status"]
        );
    }

    helm_rollback(world).await?;
    ensure!(
        cluster_roles.get_opt("trellis").await?.is_some(),
        "the rollback did not restore the ClusterRole"
    );
    wait_for(
        "the cluster-wide operator to take the other Corpus up",
        Duration::from_secs(120),
        || async {
            let corpus = support::trellis_object(client, UNWATCHED, "corpora", CORPUS).await?;
            Ok((!corpus["status"]["observedGeneration"].is_null()).then_some(()))
        },
    )
    .await?;
    // Its ingest is not this scenario's business: the namespace goes.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .delete(UNWATCHED, &DeleteParams::default())
        .await?;
    Ok(())
}
