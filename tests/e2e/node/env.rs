//! A container's environment as the kubelet builds it: the image's, the
//! API server's address, `envFrom`, then `env` (later wins), values from
//! the downward API, ConfigMaps and Secrets, and `$(VAR)` references
//! expanded in values and in the command line.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Secret};
use kube::{Api, Client, ResourceExt};

/// The value of a downward-API field path of `pod`.
pub fn field_value(pod: &Pod, path: &str) -> Result<String> {
    let meta = &pod.metadata;
    let status = pod.status.as_ref();
    let spec = pod.spec.as_ref();
    let keyed = |prefix: &str, map: Option<&BTreeMap<String, String>>| -> Option<String> {
        let key = path
            .strip_prefix(prefix)?
            .strip_prefix("['")?
            .strip_suffix("']")?;
        Some(map.and_then(|m| m.get(key)).cloned().unwrap_or_default())
    };
    if let Some(v) = keyed("metadata.labels", meta.labels.as_ref()) {
        return Ok(v);
    }
    if let Some(v) = keyed("metadata.annotations", meta.annotations.as_ref()) {
        return Ok(v);
    }
    Ok(match path {
        "metadata.name" => pod.name_any(),
        "metadata.namespace" => pod.namespace().unwrap_or_default(),
        "metadata.uid" => meta.uid.clone().unwrap_or_default(),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
        "spec.serviceAccountName" => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        "status.hostIP" => status.and_then(|s| s.host_ip.clone()).unwrap_or_default(),
        "status.podIP" => status.and_then(|s| s.pod_ip.clone()).unwrap_or_default(),
        other => bail!("unsupported fieldRef {other:?}"),
    })
}

/// Expands `$(NAME)` from `vars`; `$$` is a literal `$`; a reference to
/// an unknown name is left as written (the kubelet's rules).
pub fn expand(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some(inner) = tail.strip_prefix("$(")
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match vars.get(name) {
                Some(value) => out.push_str(value),
                None => out.push_str(&tail[..end + 3]),
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Variables in the order they were first defined; a later definition
/// replaces the value, not the place.
#[derive(Default)]
struct Env {
    order: Vec<String>,
    vars: BTreeMap<String, String>,
}

impl Env {
    fn set(&mut self, name: String, value: String) {
        if self.vars.insert(name.clone(), value).is_none() {
            self.order.push(name);
        }
    }

    fn into_pairs(mut self) -> Vec<(String, String)> {
        self.order
            .into_iter()
            .map(|k| {
                let v = self.vars.remove(&k).unwrap_or_default();
                (k, v)
            })
            .collect()
    }
}

/// The environment of `container` in `pod`, in order.
pub async fn container_env(
    client: &Client,
    pod: &Pod,
    container: &Container,
    base: &[(String, String)],
) -> Result<Vec<(String, String)>> {
    let ns = pod.namespace().unwrap_or_default();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let mut env = Env::default();
    for (k, v) in base {
        env.set(k.clone(), v.clone());
    }
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        if let Some(r) = &from.config_map_ref {
            match config_maps.get_opt(&r.name).await? {
                Some(c) => {
                    for (k, v) in c.data.unwrap_or_default() {
                        env.set(format!("{prefix}{k}"), v);
                    }
                }
                None if r.optional == Some(true) => {}
                None => bail!("envFrom: configmap {:?} not found", r.name),
            }
        }
        if let Some(r) = &from.secret_ref {
            match secrets.get_opt(&r.name).await? {
                Some(s) => {
                    for (k, v) in s.data.unwrap_or_default() {
                        let v = String::from_utf8(v.0)
                            .map_err(|_| anyhow!("secret {:?} key {k:?} is not UTF-8", r.name))?;
                        env.set(format!("{prefix}{k}"), v);
                    }
                }
                None if r.optional == Some(true) => {}
                None => bail!("envFrom: secret {:?} not found", r.name),
            }
        }
    }
    for var in container.env.iter().flatten() {
        let value = match (&var.value, &var.value_from) {
            // References reach the variables defined before this one.
            (Some(v), _) => Some(expand(v, &env.vars)),
            (None, Some(from)) => {
                if let Some(field) = &from.field_ref {
                    Some(field_value(pod, &field.field_path)?)
                } else if let Some(r) = &from.config_map_key_ref {
                    let found = config_maps
                        .get_opt(&r.name)
                        .await?
                        .and_then(|c| c.data.and_then(|d| d.get(&r.key).cloned()));
                    match found {
                        Some(v) => Some(v),
                        None if r.optional == Some(true) => None,
                        None => bail!(
                            "env {}: configmap {:?} key {:?} not found",
                            var.name,
                            r.name,
                            r.key
                        ),
                    }
                } else if let Some(r) = &from.secret_key_ref {
                    let found = secrets
                        .get_opt(&r.name)
                        .await?
                        .and_then(|s| s.data.and_then(|d| d.get(&r.key).cloned()));
                    match found {
                        Some(v) => Some(String::from_utf8(v.0).with_context(|| {
                            format!("env {}: secret {:?} key {:?}", var.name, r.name, r.key)
                        })?),
                        None if r.optional == Some(true) => None,
                        None => bail!(
                            "env {}: secret {:?} key {:?} not found",
                            var.name,
                            r.name,
                            r.key
                        ),
                    }
                } else {
                    from.resource_field_ref
                        .as_ref()
                        .map(|r| resource_value(container, &r.resource))
                }
            }
            (None, None) => Some(String::new()),
        };
        if let Some(value) = value {
            env.set(var.name.clone(), value);
        }
    }
    Ok(env.into_pairs())
}

/// `limits.cpu`, `limits.memory` and the like of a container, with the
/// node's capacity where no limit is set (the kubelet's default).
fn resource_value(container: &Container, resource: &str) -> String {
    let resources = container.resources.as_ref();
    let (table, key) = match resource.split_once('.') {
        Some(("limits", key)) => (resources.and_then(|r| r.limits.as_ref()), key),
        Some(("requests", key)) => (resources.and_then(|r| r.requests.as_ref()), key),
        _ => (None, resource),
    };
    table
        .and_then(|t| t.get(key))
        .map(|q| q.0.clone())
        .unwrap_or_else(|| match key {
            "cpu" => "2".into(),
            _ => (24u64 << 30).to_string(),
        })
}
