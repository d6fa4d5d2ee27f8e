//! A real nginx (Debian's package; `.ci/run` installs it when missing) of a test's own,
//! on a free 127.0.0.1 port, balancing round-robin with no stickiness over the replicas
//! it is given; killed when dropped. Its files live in a temp folder.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// An nginx in front of a fleet.
pub struct Nginx {
    _child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// Starts nginx round-robin over `replicas` (`127.0.0.1:PORT` each), passing on a
    /// request a replica cannot take (connection refused, 502) to the next one, and waits
    /// (bounded) until it accepts connections.
    pub async fn start(replicas: &[String]) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let root = dir.path().display().to_string();
        let servers: String = replicas
            .iter()
            .map(|r| format!("    server {r} max_fails=1 fail_timeout=30s;\n"))
            .collect();
        let config = format!(
            "worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 512; }}
http {{
  access_log off;
  client_body_temp_path {root}/body;
  proxy_temp_path {root}/proxy;
  fastcgi_temp_path {root}/fastcgi;
  uwsgi_temp_path {root}/uwsgi;
  scgi_temp_path {root}/scgi;
  upstream fleet {{
{servers}    keepalive 16;
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://fleet;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
      proxy_set_header Host $host;
      proxy_buffering off;
      proxy_next_upstream error timeout http_502;
    }}
  }}
}}
"
        );
        let file = dir.path().join("nginx.conf");
        std::fs::write(&file, config).unwrap();
        let child = Command::new("nginx")
            // One process, no workers: killing it (when dropped) leaves nothing behind.
            .args(["-p", &root, "-c", &file.display().to_string()])
            .args(["-g", "daemon off; master_process off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("nginx is installed (.ci/run installs Debian's package)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            assert!(Instant::now() < deadline, "nginx did not listen on {port}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Nginx {
            _child: child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }
}
