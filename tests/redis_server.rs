//! A real `redis-server` of a test's own, on a free 127.0.0.1 port, that the test may
//! stop and start again on the same port; killed when dropped. Keeps nothing on disk.
//! Tests that need no outage use the machine's Redis ([`MACHINE`]). Each test keeps its
//! keys under a prefix of its own ([`prefix`]), never flushing.

use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

/// The Redis this machine (and CI) runs.
pub const MACHINE: &str = "redis://127.0.0.1:6379/0";

/// A key prefix no other test (nor another run of this one) uses, so tests sharing the
/// machine's Redis never see each other's keys.
pub fn prefix(test: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("tgtest:{}:{}:{n}:{test}:", std::process::id(), nanos())
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// A `redis-server` child.
pub struct RedisServer {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Arguments beyond the defaults (`--requirepass …`).
    extra: Vec<String>,
}

impl RedisServer {
    /// Starts one on a free port and waits (bounded) until it answers `PING`.
    pub async fn start() -> RedisServer {
        RedisServer::start_with(&[]).await
    }

    /// [`RedisServer::start`] with `extra` arguments to `redis-server`.
    pub async fn start_with(extra: &[&str]) -> RedisServer {
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let extra = extra.iter().map(|a| (*a).to_owned()).collect();
        let mut server = RedisServer {
            child: None,
            port,
            extra,
        };
        server.restart().await;
        server
    }

    /// Its URL, database 0.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Kills it and waits until it has exited.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Starts it (again) on its port and waits until it answers `PING`.
    pub async fn restart(&mut self) {
        self.stop().await;
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server is installed");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !answers(self.port).await {
            assert!(
                Instant::now() < deadline,
                "redis-server on {} did not answer",
                self.port
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Whether a Redis on 127.0.0.1:`port` answers `PING` with `+PONG` (or, with a
/// password set, that authentication is needed).
async fn answers(port: u16) -> bool {
    let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    if stream.write_all(b"PING\r\n").await.is_err() {
        return false;
    }
    let mut reply = [0u8; 7];
    matches!(
        tokio::time::timeout(Duration::from_secs(1), stream.read_exact(&mut reply)).await,
        Ok(Ok(_))
    ) && (&reply == b"+PONG\r\n" || reply.starts_with(b"-NOAUTH"))
}

/// Polls `check` every 50 ms until it returns true, for at most `within`; false past it.
pub async fn eventually<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
