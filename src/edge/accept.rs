//! The accept loop of both HTTP servers, in place of `axum::serve`, which has no
//! connection cap and no header-read or idle timeout (1,100 idle connections from one
//! client once took `catalogue serve` down until they closed).
//!
//! Each accepted connection takes a place among [`Connections::max`] and among its
//! address's [`Connections::per_address`] (an IPv6 /64 counting as one address); one over either cap is answered `503` with
//! `Retry-After` and closed at once, so held connections cost the others nothing. A
//! connection must send each request head within [`Connections::header_timeout`] of
//! opening or of its previous answer, so an idle connection is closed after that long.
//! HTTP/1.1 only: with cleartext HTTP/2 (prior knowledge) hyper has no idle timeout,
//! and clients of both APIs speak HTTP/1.1 (a TLS proxy in front may speak h2).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::Service;

use crate::limits::{
    HTTP_CONNECTION_RETRY_AFTER, HTTP_FD_RESERVE, HTTP_HEADER_TIMEOUT, HTTP_MAX_CONNECTIONS,
    HTTP_MAX_CONNECTIONS_PER_ADDRESS,
};

/// Connection limits of an HTTP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connections {
    /// Connections held at once. By default, [`HTTP_MAX_CONNECTIONS`].
    pub max: usize,
    /// Connections one client address may hold at once. By default,
    /// [`HTTP_MAX_CONNECTIONS_PER_ADDRESS`].
    pub per_address: usize,
    /// Time allowed to send a request head, from the connection's start or its previous
    /// answer. By default, [`HTTP_HEADER_TIMEOUT`].
    pub header_timeout: Duration,
    /// Time a request body may take before it must keep arriving at
    /// [`crate::limits::HTTP_BODY_MIN_RATE`] (`edge::body`). By default,
    /// [`crate::limits::HTTP_BODY_TIMEOUT`].
    pub body_timeout: Duration,
}

impl Default for Connections {
    fn default() -> Self {
        Connections {
            max: HTTP_MAX_CONNECTIONS,
            per_address: HTTP_MAX_CONNECTIONS_PER_ADDRESS,
            header_timeout: HTTP_HEADER_TIMEOUT,
            body_timeout: crate::limits::HTTP_BODY_TIMEOUT,
        }
    }
}

impl Connections {
    /// These limits with `max` no higher than the process's file limit allows, raising
    /// the soft limit towards the hard one first. A lowered cap is said on stderr.
    pub fn within_file_limit(mut self) -> Connections {
        let wanted = self.max as u64 + HTTP_FD_RESERVE;
        let limit = rlimit::increase_nofile_limit(wanted).unwrap_or(wanted);
        if limit < wanted {
            let max = usize::try_from(limit.saturating_sub(HTTP_FD_RESERVE).max(1)).unwrap_or(1);
            tracing::warn!(
                "the file limit ({limit}) is too low for {} connections; serving at most {max}",
                self.max
            );
            self.max = max;
            self.per_address = self.per_address.min(max);
        }
        self
    }
}

/// The places taken: in all and per address.
#[derive(Debug, Default)]
struct Places {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// A connection's place, given back when it drops.
struct Place {
    places: Arc<Mutex<Places>>,
    address: IpAddr,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut places = self.places.lock().unwrap_or_else(|p| p.into_inner());
        places.total = places.total.saturating_sub(1);
        if let Some(n) = places.by_address.get_mut(&self.address) {
            *n -= 1;
            if *n == 0 {
                places.by_address.remove(&self.address);
            }
        }
    }
}

/// Takes a place for a connection from `address`, or `None` over a cap.
fn admit(places: &Arc<Mutex<Places>>, limits: &Connections, address: IpAddr) -> Option<Place> {
    let mut held = places.lock().unwrap_or_else(|p| p.into_inner());
    let of_address = held.by_address.get(&address).copied().unwrap_or(0);
    if held.total >= limits.max || of_address >= limits.per_address {
        return None;
    }
    held.total += 1;
    held.by_address.insert(address, of_address + 1);
    Some(Place {
        places: places.clone(),
        address,
    })
}

/// Serves `app` on `listener` under `limits` until `stopping` fires, then stops
/// accepting and asks every connection to close after its answer in flight; returns
/// when all have closed. Each request carries `ConnectInfo<SocketAddr>`.
pub async fn serve(listener: TcpListener, app: Router, limits: Connections, stopping: CancellationToken) {
    let places = Arc::new(Mutex::new(Places::default()));
    let tracker = TaskTracker::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopping.cancelled() => break,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors or a connection reset before it was taken:
                // wait a moment rather than spin (as hyper's and axum's loops do).
                tracing::debug!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // An IPv6 host is given a /64: its addresses count as one client.
        let client = crate::access::rate::network(peer.ip());
        let Some(place) = admit(&places, &limits, client) else {
            refuse(&tcp);
            continue;
        };
        // An answer written in parts must not wait for the client's delayed ACK.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
            // Router clones are reference counts; it is always ready (no poll_ready needed).
            let answer = app.clone().call(request);
            async move { Ok::<_, Infallible>(answer.await.unwrap_or_else(|never| match never {})) }
        });
        let connection = http.serve_connection(TokioIo::new(tcp), service).with_upgrades();
        let stopping = stopping.clone();
        tracker.spawn(async move {
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                ended = connection.as_mut() => {
                    if let Err(e) = ended {
                        tracing::debug!("connection from {peer} ended: {e}");
                    }
                }
                () = stopping.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop(place);
        });
    }
    tracker.close();
    tracker.wait().await;
}

/// Answers a connection over a cap 503 and closes it, without waiting on the client:
/// the answer fits the socket's send buffer, and what does not fit is dropped.
fn refuse(tcp: &tokio::net::TcpStream) {
    let body = "toolgate is serving as many connections as it allows; retry shortly\n";
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nretry-after: {}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        HTTP_CONNECTION_RETRY_AFTER.as_secs(),
        body.len()
    );
    let _ = tcp.try_write(answer.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_capped_in_all_and_per_address_and_given_back() {
        let limits = Connections {
            max: 3,
            per_address: 2,
            header_timeout: HTTP_HEADER_TIMEOUT,
            body_timeout: crate::limits::HTTP_BODY_TIMEOUT,
        };
        let places = Arc::new(Mutex::new(Places::default()));
        let a: IpAddr = [127, 0, 0, 1].into();
        let b: IpAddr = [127, 0, 0, 2].into();
        let first = admit(&places, &limits, a);
        let second = admit(&places, &limits, a);
        assert!(first.is_some() && second.is_some());
        assert!(admit(&places, &limits, a).is_none(), "per address");
        let third = admit(&places, &limits, b);
        assert!(third.is_some());
        assert!(admit(&places, &limits, b).is_none(), "in all");
        drop(first);
        assert!(admit(&places, &limits, a).is_some());
        drop((second, third));
        assert_eq!(places.lock().unwrap().total, 0);
        assert!(places.lock().unwrap().by_address.is_empty());
    }
}
