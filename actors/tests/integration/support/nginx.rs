//! Debian's nginx as a child of the test: one worker in the foreground, its configuration, pid
//! file, logs and temp files in a temp directory, passing every request round-robin to loopback
//! upstreams over keep-alive HTTP/1.1 (the proxy of docs/clusters.md). Killed when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::eventually::eventually_blocking;

/// Where nginx is: on the PATH, or in /usr/sbin where Debian installs it (outside a user's PATH).
fn binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("nginx"));
    on_path.chain([PathBuf::from("/usr/sbin/nginx")]).find(|path| path.is_file())
}

/// Whether nginx is installed; the test is skipped, saying so, when not.
pub(crate) fn installed() -> bool {
    let there = binary().is_some();
    if !there {
        eprintln!("SKIPPED: nginx is not installed; .ci/run installs it");
    }
    there
}

/// A running nginx proxying `127.0.0.1:port` to its upstreams.
pub(crate) struct Nginx {
    /// The loopback port nginx listens on.
    pub(crate) port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// Starts nginx on a free loopback port, round-robin over `upstreams` (loopback ports).
    pub(crate) fn start(upstreams: &[u16]) -> Nginx {
        let nginx = binary().expect("nginx is installed (check installed() first)");
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let work = dir.path().display();
        let servers: String = upstreams.iter().map(|p| format!(" server 127.0.0.1:{p};")).collect();
        // `user` applies only when the master runs as root (as in CI): its worker then reads
        // the temp directory it was given.
        let config = format!(
            "worker_processes 1; daemon off; pid {work}/nginx.pid; error_log {work}/error.log;\n\
             user root;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {work}/body; proxy_temp_path {work}/proxy;\n\
             \x20 fastcgi_temp_path {work}/fastcgi; uwsgi_temp_path {work}/uwsgi; scgi_temp_path {work}/scgi;\n\
             \x20 upstream mcpd {{{servers} keepalive 16; }}\n\
             \x20 server {{ listen 127.0.0.1:{port}; location / {{ proxy_pass http://mcpd; proxy_http_version 1.1;\n\
             \x20   proxy_set_header Connection \"\"; proxy_set_header Host $http_host; proxy_buffering off; }} }}\n}}\n"
        );
        let conf = dir.path().join("nginx.conf");
        std::fs::write(&conf, config).unwrap();
        let child = Command::new(nginx)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf)
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let running = Nginx { port, child, _dir: dir };
        eventually_blocking("nginx accepts connections", Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        running
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
