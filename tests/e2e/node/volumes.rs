//! A pod's volumes as host directories, read with the node's own
//! credentials (so the Node authorizer decides what it may read): config
//! maps, secrets, projected service-account tokens with the cluster CA and
//! the namespace, downward API files, empty directories, and claims
//! through their bound PersistentVolume's host path.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, DownwardAPIVolumeFile, KeyToPath, PersistentVolume, PersistentVolumeClaim, Pod,
    Secret, ServiceAccount, Volume,
};
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};

/// A volume as the containers see it.
#[derive(Clone, Debug)]
pub struct HostVolume {
    pub path: PathBuf,
    /// Read-only whatever the mount says (a read-only claim).
    pub read_only: bool,
}

/// Why a pod's volumes are not there yet; the node retries.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    #[error("{0}")]
    Waiting(String),
}

/// Writes every volume of `pod` under `dir` (one directory per volume).
pub async fn materialise(
    client: &Client,
    pod: &Pod,
    dir: &Path,
) -> Result<BTreeMap<String, HostVolume>> {
    let ns = pod.namespace().unwrap_or_default();
    let spec = pod.spec.as_ref().context("pod has no spec")?;
    let mut volumes = BTreeMap::new();
    for volume in spec.volumes.iter().flatten() {
        let host = volume_dir(client, pod, &ns, volume, dir)
            .await
            .with_context(|| format!("volume {:?}", volume.name))?;
        volumes.insert(volume.name.clone(), host);
    }
    Ok(volumes)
}

async fn volume_dir(
    client: &Client,
    pod: &Pod,
    ns: &str,
    volume: &Volume,
    dir: &Path,
) -> Result<HostVolume> {
    let path = dir.join(&volume.name);
    let fresh = |path: &Path| -> Result<()> {
        if path.exists() {
            std::fs::remove_dir_all(path)?;
        }
        std::fs::create_dir_all(path)?;
        Ok(())
    };
    if let Some(claim) = &volume.persistent_volume_claim {
        let host = claim_path(client, ns, &claim.claim_name).await?;
        return Ok(HostVolume {
            path: host,
            read_only: claim.read_only.unwrap_or(false),
        });
    }
    if let Some(host_path) = &volume.host_path {
        return Ok(HostVolume {
            path: PathBuf::from(&host_path.path),
            read_only: false,
        });
    }
    if volume.empty_dir.is_some() {
        // Kept across container restarts, as the kubelet keeps it.
        std::fs::create_dir_all(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))?;
        return Ok(HostVolume {
            path,
            read_only: false,
        });
    }
    fresh(&path)?;
    if let Some(source) = &volume.config_map {
        let mode = source.default_mode.unwrap_or(0o644);
        let optional = source.optional.unwrap_or(false);
        write_object(
            client,
            ns,
            KeySource::ConfigMap,
            &source.name,
            source.items.as_deref(),
            optional,
            mode,
            &path,
        )
        .await?;
    } else if let Some(source) = &volume.secret {
        let name = source.secret_name.clone().unwrap_or_default();
        let mode = source.default_mode.unwrap_or(0o644);
        let optional = source.optional.unwrap_or(false);
        write_object(
            client,
            ns,
            KeySource::Secret,
            &name,
            source.items.as_deref(),
            optional,
            mode,
            &path,
        )
        .await?;
    } else if let Some(source) = &volume.downward_api {
        let mode = source.default_mode.unwrap_or(0o644);
        write_downward(
            pod,
            source.items.as_deref().unwrap_or_default(),
            mode,
            &path,
        )?;
    } else if let Some(projected) = &volume.projected {
        let mode = projected.default_mode.unwrap_or(0o644);
        for source in projected.sources.iter().flatten() {
            if let Some(token) = &source.service_account_token {
                let account = pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.service_account_name.clone())
                    .unwrap_or_else(|| "default".into());
                let jwt = request_token(
                    client,
                    pod,
                    ns,
                    &account,
                    token.audience.as_deref(),
                    token.expiration_seconds,
                )
                .await?;
                write_file(&path.join(&token.path), jwt.as_bytes(), mode)?;
            }
            if let Some(c) = &source.config_map {
                let optional = c.optional.unwrap_or(false);
                write_object(
                    client,
                    ns,
                    KeySource::ConfigMap,
                    &c.name,
                    c.items.as_deref(),
                    optional,
                    mode,
                    &path,
                )
                .await?;
            }
            if let Some(s) = &source.secret {
                let optional = s.optional.unwrap_or(false);
                write_object(
                    client,
                    ns,
                    KeySource::Secret,
                    &s.name,
                    s.items.as_deref(),
                    optional,
                    mode,
                    &path,
                )
                .await?;
            }
            if let Some(d) = &source.downward_api {
                write_downward(pod, d.items.as_deref().unwrap_or_default(), mode, &path)?;
            }
        }
    } else {
        bail!(
            "this node supports configMap, secret, projected, downwardAPI, emptyDir, hostPath and persistentVolumeClaim volumes only"
        );
    }
    Ok(HostVolume {
        path,
        read_only: true,
    })
}

/// The host path of a bound claim's PersistentVolume.
async fn claim_path(client: &Client, ns: &str, claim: &str) -> Result<PathBuf> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let pvc = claims
        .get_opt(claim)
        .await?
        .ok_or_else(|| NotReady::Waiting(format!("persistentvolumeclaim {claim:?} not found")))?;
    let volume = pvc
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .filter(|_| pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
        .ok_or_else(|| {
            NotReady::Waiting(format!("persistentvolumeclaim {claim:?} is not bound"))
        })?;
    let pv = Api::<PersistentVolume>::all(client.clone())
        .get(&volume)
        .await?;
    let spec = pv.spec.as_ref().context("persistent volume has no spec")?;
    let path = spec
        .host_path
        .as_ref()
        .map(|h| h.path.clone())
        .or_else(|| spec.local.as_ref().map(|l| l.path.clone()))
        .ok_or_else(|| anyhow!("persistent volume {volume} is neither hostPath nor local"))?;
    Ok(PathBuf::from(path))
}

/// Where a volume's files come from.
#[derive(Clone, Copy)]
enum KeySource {
    ConfigMap,
    Secret,
}

/// The keys of a ConfigMap or Secret as bytes (`data` and `binaryData`,
/// or `data` and `stringData`), written as files under `dir`; an
/// optional one that does not exist writes nothing.
#[allow(clippy::too_many_arguments)]
async fn write_object(
    client: &Client,
    ns: &str,
    source: KeySource,
    name: &str,
    items: Option<&[KeyToPath]>,
    optional: bool,
    mode: i32,
    dir: &Path,
) -> Result<()> {
    let text = |map: Option<BTreeMap<String, String>>| {
        map.unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
    };
    let bytes = |map: Option<BTreeMap<String, k8s_openapi::ByteString>>| {
        map.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0))
    };
    let (what, data): (&str, Option<BTreeMap<String, Vec<u8>>>) = match source {
        KeySource::ConfigMap => {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
            let found = api.get_opt(name).await?;
            let data = found.map(|c| text(c.data).chain(bytes(c.binary_data)).collect());
            ("configmap", data)
        }
        KeySource::Secret => {
            let api: Api<Secret> = Api::namespaced(client.clone(), ns);
            let found = api.get_opt(name).await?;
            let data = found.map(|s| bytes(s.data).chain(text(s.string_data)).collect());
            ("secret", data)
        }
    };
    match data {
        Some(data) => write_keys(&data, items, mode, dir, &format!("{what} {name:?}")),
        None if optional => Ok(()),
        None => Err(NotReady::Waiting(format!("{what} {name:?} not found")).into()),
    }
}

fn write_keys(
    data: &BTreeMap<String, Vec<u8>>,
    items: Option<&[KeyToPath]>,
    mode: i32,
    dir: &Path,
    what: &str,
) -> Result<()> {
    match items {
        None => {
            for (key, value) in data {
                write_file(&dir.join(key), value, mode)?;
            }
        }
        Some(items) => {
            for item in items {
                let value = data
                    .get(&item.key)
                    .ok_or_else(|| anyhow!("{what} has no key {:?}", item.key))?;
                write_file(&dir.join(&item.path), value, item.mode.unwrap_or(mode))?;
            }
        }
    }
    Ok(())
}

fn write_downward(pod: &Pod, items: &[DownwardAPIVolumeFile], mode: i32, dir: &Path) -> Result<()> {
    for item in items {
        let value = match &item.field_ref {
            Some(field) => super::env::field_value(pod, &field.field_path)?,
            None => bail!(
                "downward API file {:?}: only fieldRef is supported",
                item.path
            ),
        };
        write_file(
            &dir.join(&item.path),
            value.as_bytes(),
            item.mode.unwrap_or(mode),
        )?;
    }
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8], mode: i32) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode as u32 & 0o777))?;
    Ok(())
}

/// A token for the pod's ServiceAccount, bound to the pod, as the kubelet
/// asks for one (TokenRequest; NodeRestriction admits only tokens bound
/// to the node's own pods).
async fn request_token(
    client: &Client,
    pod: &Pod,
    ns: &str,
    account: &str,
    audience: Option<&str>,
    expiration: Option<i64>,
) -> Result<String> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: audience.map(|a| vec![a.to_string()]).unwrap_or_default(),
            expiration_seconds: expiration.or(Some(3607)),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(pod.name_any()),
                uid: pod.metadata.uid.clone(),
            }),
        },
        ..Default::default()
    };
    let answer: TokenRequest = api
        .create_subresource("token", account, &PostParams::default(), &request)
        .await
        .with_context(|| format!("requesting a token for serviceaccount {account:?}"))?;
    answer
        .status
        .map(|s| s.token)
        .context("the token request came back without a token")
}
