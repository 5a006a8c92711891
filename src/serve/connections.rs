//! The listener side of the service: accepting connections, bounding how
//! many are held and how long each may sit idle, and draining them on
//! shutdown.
//!
//! A client that opens connections and never finishes a request must not
//! be able to exhaust the process's file descriptors, starve the probes
//! or hold a stopping pod open. So:
//!
//! - every connection must send a complete request head within
//!   [`Limits::header_timeout`], counted from when the server starts
//!   waiting for one; on a keep-alive connection that is also how long it
//!   may sit idle between requests;
//! - a request body must arrive whole within [`Limits::body_timeout`]
//!   (enforced in the router, see `read_body`);
//! - at most [`Limits::max_connections`] connections are served, fewer
//!   when the descriptor limit is lower ([`connection_cap`]); past that a
//!   small probe lane of [`PROBE_LANE`] more connections answers only the
//!   probe and metrics endpoints, one request each with a short head
//!   deadline, so kubelet probes and scrapes still get through while the
//!   regular lane is full. When the probe lane is full too, its oldest
//!   connection is closed to make room: a probe sends its request the
//!   moment it connects and is done in milliseconds, so the oldest one
//!   waiting is the one least likely to be a probe;
//! - on shutdown the listener closes, idle connections close, and
//!   requests in flight get [`Limits::drain_timeout`] to finish before the
//!   rest are dropped.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use super::{Limits, Metrics, ServeError};

/// Connections served past the regular cap, for probes and scrapes only.
pub const PROBE_LANE: usize = 32;

/// How long a probe-lane connection may take to send its request head.
/// Probes send theirs as soon as they connect; a client that does not is
/// not a probe.
pub const PROBE_LANE_HEADER_TIMEOUT: Duration = Duration::from_secs(1);

/// The paths the probe lane answers.
pub const PROBE_PATHS: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// Descriptors kept for what is not a connection: the index files, the
/// model, the token file, logs, the graph store's sockets.
const DESCRIPTOR_RESERVE: u64 = 128;

/// After a failed `accept` (out of descriptors, most often), how long the
/// loop waits before accepting again; connections wait in the backlog.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Which lane a connection was admitted to; set on each of its requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    Regular,
    Probe,
}

impl Lane {
    pub fn name(self) -> &'static str {
        match self {
            Lane::Regular => "regular",
            Lane::Probe => "probe",
        }
    }
}

/// How a connection was let in: a permit of the regular lane, or a place
/// in the probe lane that ends when the lane evicts it.
enum Admission {
    Regular(tokio::sync::OwnedSemaphorePermit),
    Probe(tokio::sync::oneshot::Receiver<()>),
}

/// The probe lane's connections, oldest first: a sender each, whose
/// receiver ends its connection when the sender is used or dropped.
#[derive(Default)]
struct ProbeLane {
    open: std::collections::VecDeque<tokio::sync::oneshot::Sender<()>>,
}

impl ProbeLane {
    /// Forgets connections that have ended and, when the lane is still
    /// full, evicts the oldest; whether it evicted one.
    fn make_room(&mut self) -> bool {
        self.open.retain(|sender| !sender.is_closed());
        if self.open.len() < PROBE_LANE {
            return false;
        }
        // Dropping the sender ends the receiving connection.
        self.open.pop_front().is_some()
    }

    fn admit(&mut self) -> tokio::sync::oneshot::Receiver<()> {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        self.open.push_back(sender);
        receiver
    }
}

/// The regular lane's size: `configured`, lowered so that it and the
/// probe lane fit in the process's descriptor limit with a reserve to
/// spare. Never below one.
pub fn connection_cap(configured: usize) -> usize {
    let cap = configured.max(1);
    match descriptor_limit() {
        Some(limit) => {
            let room = limit.saturating_sub(DESCRIPTOR_RESERVE + PROBE_LANE as u64);
            cap.min(usize::try_from(room).unwrap_or(usize::MAX)).max(1)
        }
        None => cap,
    }
}

/// The soft limit on open descriptors, when the platform has one.
fn descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use nix::sys::resource::{Resource, getrlimit};
        getrlimit(Resource::RLIMIT_NOFILE)
            .ok()
            .map(|(soft, _)| soft)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Accepts connections on `listener` and serves `router` on each until
/// `shutdown` completes; then drains within `limits.drain_timeout`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: &Limits,
    metrics: &Metrics,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let cap = connection_cap(limits.max_connections);
    if cap < limits.max_connections {
        tracing::warn!(
            configured = limits.max_connections,
            cap,
            "connection limit lowered to fit the descriptor limit (ulimit -n)"
        );
    }
    let regular = Arc::new(Semaphore::new(cap));
    let mut probe_lane = ProbeLane::default();
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let mut accept_failures = 0_u64;
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Reported once and then every thousandth time: a
                    // descriptor shortage repeats as fast as the loop runs.
                    if accept_failures.is_multiple_of(1000) {
                        tracing::warn!(error = %e, "accepting a connection failed; backing off");
                    }
                    accept_failures += 1;
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let (lane, admission) = match Arc::clone(&regular).try_acquire_owned() {
            Ok(permit) => (Lane::Regular, Admission::Regular(permit)),
            Err(_) => {
                if probe_lane.make_room() {
                    metrics.connection_evicted();
                }
                (Lane::Probe, Admission::Probe(probe_lane.admit()))
            }
        };
        // Small JSON answers: send them without Nagle's delay.
        let _ = stream.set_nodelay(true);
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new());
        match lane {
            Lane::Regular => {
                http.header_read_timeout(limits.header_timeout);
            }
            Lane::Probe => {
                http.header_read_timeout(PROBE_LANE_HEADER_TIMEOUT.min(limits.header_timeout))
                    .keep_alive(false);
            }
        }
        let router = router
            .clone()
            .map_request(move |mut request: Request<Incoming>| {
                request.extensions_mut().insert(lane);
                request
            });
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router));
        let connection = graceful.watch(connection);
        let open = metrics.connection_opened(lane);
        tokio::spawn(async move {
            let ended = match admission {
                Admission::Regular(permit) => {
                    let ended = connection.await;
                    drop(permit);
                    Some(ended)
                }
                Admission::Probe(evicted) => tokio::select! {
                    ended = connection => Some(ended),
                    _ = evicted => None,
                },
            };
            // An error here is the client's doing (a reset, a head that
            // timed out or did not parse); hyper has answered what it could.
            if let Some(Err(e)) = ended {
                tracing::debug!(error = %e, lane = lane.name(), "connection ended");
            }
            drop(open);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(limits.drain_timeout) => {
            tracing::warn!(
                seconds = limits.drain_timeout.as_secs_f64(),
                open = metrics.open_connections(),
                "drain deadline passed; closing the connections still open"
            );
        }
    }
    Ok(())
}
