//! The one HTTP stub every test of an OpenAI-compatible endpoint talks to: a minimal HTTP/1.1 server on
//! 127.0.0.1, one request per connection, whose answers a handler decides. The chain tests put a deterministic
//! model behind it; the runner tests, status codes, headers, raw bytes and dead connections.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One request as the stub read it.
pub struct Request {
    /// The request line (`POST /v1/chat/completions HTTP/1.1`).
    pub line: String,
    /// The Authorization header's value (empty when there is none).
    pub authorization: String,
    /// The body.
    pub body: Vec<u8>,
}

impl Request {
    /// The body as JSON (`Null` when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// What the stub does with a request.
pub enum Reply {
    /// `HTTP/1.1 <status>` with `headers` (each ending in `\r\n`) and a JSON body.
    Json {
        status: u16,
        headers: String,
        body: String,
    },
    /// These bytes, as they are (a malformed response).
    Raw(String),
    /// Close the connection without answering (a dead connection).
    Drop,
    /// Hold the connection open and never answer (until the stub is dropped).
    Hang,
    /// Close the connection and stop listening (the server dies).
    Die,
}

impl Reply {
    /// `200 OK` with a JSON body.
    pub fn ok(body: String) -> Reply {
        Reply::Json {
            status: 200,
            headers: String::new(),
            body,
        }
    }
}

/// A running stub; dropping it stops it.
pub struct Stub {
    /// `http://127.0.0.1:<port>/v1`.
    pub url: String,
    pub port: u16,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Stub {
    /// Wait for the server to end by itself (a [`Reply::Die`], or its limits).
    pub fn wait(&mut self) {
        if let Some(h) = self.handle.take() {
            h.join().unwrap();
        }
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Serve on `port` (0: any free one) until dropped, until the handler says [`Reply::Die`], or after 10 000
/// connections or 300 s, whichever comes first.
pub fn serve(port: u16, handler: impl FnMut(&Request) -> Reply + Send + 'static) -> Stub {
    serve_at_most(port, 10_000, handler)
}

/// The ports [`bind`] picks from when asked for any: below Linux's default ephemeral range (32768–60999), so
/// that no client socket of a parallel test (whose local port the kernel takes from that range) can hold the
/// port when a test restarts its stub on the same one (a resume test must: the run keeps the URL).
const OWN_PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A listener on 127.0.0.1:`port`; `port` 0 takes a free one of [`OWN_PORTS`]. The address may be taken for a
/// moment (another test's stub picked the same port, a socket of ours still closing): tried again for up to
/// 10 s before the test fails.
fn bind(port: u16) -> TcpListener {
    use std::hash::{BuildHasher, Hasher};
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    loop {
        let p = if port == 0 {
            h.write_u8(0);
            OWN_PORTS.start + (h.finish() % u64::from(OWN_PORTS.end - OWN_PORTS.start)) as u16
        } else {
            port
        };
        match TcpListener::bind(("127.0.0.1", p)) {
            Ok(l) => return l,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && Instant::now() < deadline => {
                if port != 0 {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            Err(e) => panic!("stub: cannot listen on 127.0.0.1:{p}: {e}"),
        }
    }
}

/// [`serve`] for at most `max` connections: the listener closes after the last (later clients are refused).
pub fn serve_at_most(
    port: u16,
    max: usize,
    mut handler: impl FnMut(&Request) -> Reply + Send + 'static,
) -> Stub {
    let listener = bind(port);
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let handle = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(300);
        let mut conns = 0usize;
        let mut held = Vec::new();
        while !stop2.load(Ordering::Relaxed) && Instant::now() < deadline && conns < max {
            let stream = match listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                }
                Err(_) => continue,
            };
            conns += 1;
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let Some(req) = read_request(&stream) else {
                continue;
            };
            let mut stream = stream;
            let bytes = match handler(&req) {
                Reply::Json {
                    status,
                    headers,
                    body,
                } => format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: \
                     close\r\n{headers}\r\n{body}",
                    body.len()
                ),
                Reply::Raw(raw) => raw,
                Reply::Drop => continue,
                Reply::Hang => {
                    held.push(stream);
                    continue;
                }
                Reply::Die => return,
            };
            let _ = stream.write_all(bytes.as_bytes());
        }
    });
    Stub {
        url: format!("http://127.0.0.1:{port}/v1"),
        port,
        stop,
        handle: Some(handle),
    }
}

/// Read one request: the request line, the headers (Content-Length and Authorization kept), the body.
fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let (mut line, mut authorization, mut len) = (String::new(), String::new(), 0usize);
    loop {
        let mut raw = String::new();
        if reader.read_line(&mut raw).ok()? == 0 {
            return None;
        }
        let l = raw.trim_end();
        if line.is_empty() {
            line = l.to_string();
            continue;
        }
        if l.is_empty() {
            break;
        }
        let lower = l.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse().ok()?;
        }
        if lower.starts_with("authorization:") {
            authorization = l["authorization:".len()..].trim().to_string();
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        line,
        authorization,
        body,
    })
}
