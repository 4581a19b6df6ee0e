//! `sword eval run`: send requests to an OpenAI-compatible chat-completions endpoint with bounded
//! concurrency, retries and crash-safe resume; and the offline Batch JSONL round trip.
//!
//! * **Resume log** `DIR/answers.jsonl`: one line per finished attempt sequence, appended and flushed as soon
//!   as it completes (a killed run loses at most the requests in flight). Each line carries `key` = xxh3-128
//!   of (base URL, model, messages, generation parameters), so changing any of them asks again. A rerun skips
//!   keys whose line has `status: "ok"`; errors and empty answers are logged (`status: "error"`/`"empty"`) but
//!   never count as done.
//! * **Retries**: on transport errors and HTTP 408, 409, 429 and 5xx, up to `retries` times, waiting
//!   `min(cap, base·2^attempt)` plus uniform jitter in [0, that/2], or the server's `Retry-After` (seconds)
//!   when given (also capped). Other 4xx fail at once.
//! * **API key**: read from the environment variable named by `--api-key-env`; sent only as the
//!   `Authorization` header; never logged or written.
//! * **Outputs**: `DIR/samples.jsonl` (each request's id, suite, meta, prompt messages, raw answer, usage),
//!   `DIR/results.json` (counts and token totals).

use super::request::{Message, Request};
use super::secret::{redact_url, Secrets};
use crate::core::error::{Error, IoContext, Result};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// Runner settings.
#[derive(Clone, Debug, clap::Args, Serialize, Deserialize)]
pub struct RunConfig {
    /// Base URL of the OpenAI-compatible API, e.g. `http://127.0.0.1:8000/v1` (`/chat/completions` is appended).
    #[arg(long)]
    pub base_url: String,
    /// Model name sent in each request.
    #[arg(long)]
    pub model: String,
    /// Name of the environment variable holding the API key (none = no Authorization header).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Requests in flight at once (threads). Typical 1–16.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Whole-request timeout, seconds. Typical 60–600.
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
    /// Retries after the first attempt on 408/409/429/5xx and transport errors.
    #[arg(long, default_value_t = 5)]
    pub retries: u32,
    /// First backoff, milliseconds (doubles per retry).
    #[arg(long, default_value_t = 500)]
    pub backoff_ms: u64,
    /// Backoff cap, milliseconds (also caps Retry-After).
    #[arg(long, default_value_t = 30_000)]
    pub backoff_cap_ms: u64,
    /// Sampling temperature (0 = greedy, as in the papers).
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Maximum tokens to generate per answer.
    #[arg(long, default_value_t = 512)]
    pub max_tokens: u32,
    /// Stop after this many new requests (for smoke tests and staged runs; a rerun continues).
    #[arg(long)]
    pub max_requests: Option<usize>,
    /// The endpoint's API: `chat` (POST BASE/chat/completions) or `responses` (POST BASE/responses, the
    /// Responses API, which offers the `web_search` tool; requests written for it say so and are refused
    /// by `chat`).
    #[arg(long, value_enum, default_value_t = Api::Chat)]
    #[serde(default)]
    pub api: Api,
}

/// Which OpenAI-compatible API the runner speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// Chat Completions: `messages` in, `choices[0].message.content` out.
    #[default]
    Chat,
    /// Responses: `input` (the messages) in, the `output_text` parts of the `output` messages out.
    Responses,
}

impl Api {
    fn path(self) -> &'static str {
        match self {
            Api::Chat => "chat/completions",
            Api::Responses => "responses",
        }
    }
}

/// Whether a request was written for the Responses API (`meta.api == "responses"`).
pub fn wants_responses(r: &Request) -> bool {
    r.meta.get("api").and_then(Value::as_str) == Some("responses")
}

impl Default for RunConfig {
    /// The flags' defaults, with no endpoint and no model (both are required on the command line).
    fn default() -> Self {
        RunConfig {
            base_url: String::new(),
            model: String::new(),
            api_key_env: None,
            concurrency: 4,
            timeout: 120.0,
            retries: 5,
            backoff_ms: 500,
            backoff_cap_ms: 30_000,
            temperature: 0.0,
            max_tokens: 512,
            max_requests: None,
            api: Api::Chat,
        }
    }
}

impl RunConfig {
    /// The settings as written to manifests: the base URL without its password ([`redact_url`]); the key
    /// is never part of them (only the name of its variable).
    pub fn redacted(&self) -> RunConfig {
        RunConfig {
            base_url: redact_url(&self.base_url),
            ..self.clone()
        }
    }
}

/// Generation parameters included in the cache key and the request body: temperature, max tokens, `seed`
/// only when one is given and the request's own body fields only when it has some (so requests without
/// them keep the keys they always had), and `api` only for the Responses API.
fn params(cfg: &RunConfig, seed: Option<u64>, req: &Request) -> Value {
    let mut p = json!({"temperature": cfg.temperature, "max_tokens": cfg.max_tokens});
    if let Some(o) = p.as_object_mut() {
        if let Some(s) = seed {
            o.insert("seed".into(), json!(s));
        }
        if cfg.api == Api::Responses {
            o.insert("api".into(), json!("responses"));
        }
        for (k, v) in &req.body {
            o.insert(k.clone(), v.clone());
        }
    }
    p
}

/// The body sent for `req`: its messages (Chat: `messages`; Responses: `input`, with `max_tokens` sent as
/// `max_output_tokens`) with the parameters of [`params`] (`api` is not sent).
fn request_body(cfg: &RunConfig, req: &Request, params: &Value) -> Value {
    let mut body = match cfg.api {
        Api::Chat => json!({"model": cfg.model, "messages": req.messages}),
        Api::Responses => json!({"model": cfg.model, "input": req.messages}),
    };
    if let (Some(o), Some(p)) = (body.as_object_mut(), params.as_object()) {
        for (k, v) in p {
            match (cfg.api, k.as_str()) {
                (_, "api") => {}
                (Api::Responses, "max_tokens") => {
                    o.insert("max_output_tokens".into(), v.clone());
                }
                _ => {
                    o.insert(k.clone(), v.clone());
                }
            }
        }
    }
    body
}

/// The answer text of a response: Chat `choices[0].message.content`; Responses `output_text` when the
/// server gives it, else the `output_text` parts of its `message` items, joined.
fn answer_text(api: Api, v: &Value) -> Option<String> {
    match api {
        Api::Chat => v
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::to_string),
        Api::Responses => {
            if let Some(t) = v.get("output_text").and_then(Value::as_str) {
                return Some(t.to_string());
            }
            let parts: Vec<&str> = v
                .get("output")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
                .flat_map(|item| {
                    item.get("content")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                })
                .filter(|c| c.get("type").and_then(Value::as_str) == Some("output_text"))
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .collect();
            (!parts.is_empty()).then(|| parts.concat())
        }
    }
}

/// Usage with the Responses API's names (`input_tokens`, `output_tokens`) also under the Chat names the
/// token totals read.
fn normalise_usage(mut u: Value) -> Value {
    if let Some(o) = u.as_object_mut() {
        for (from, to) in [
            ("input_tokens", "prompt_tokens"),
            ("output_tokens", "completion_tokens"),
        ] {
            if let (Some(v), false) = (o.get(from).cloned(), o.contains_key(to)) {
                o.insert(to.into(), v);
            }
        }
    }
    u
}

/// Cache key of a request: xxh3-128 (hex) of the canonical JSON of base URL, model, messages, parameters.
pub fn cache_key(base_url: &str, model: &str, messages: &[Message], params: &Value) -> String {
    // The URL as written to files: a password in it changes nothing the server answers, and its hash is
    // no place for it either.
    let url = redact_url(base_url);
    let canon = json!([url.trim_end_matches('/'), model, messages, params]).to_string();
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(canon.as_bytes()))
}

/// One line of the resume log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    pub key: String,
    pub id: String,
    /// `ok`, `empty` or `error`.
    pub status: String,
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub usage: Option<Value>,
    #[serde(default)]
    pub error: Option<String>,
    pub attempts: u32,
}

/// Read the done answers of a resume log (key → line); a torn last line (killed mid-write) is ignored.
pub fn read_log(path: &Path) -> Result<HashMap<String, LogLine>> {
    let mut done = HashMap::new();
    let bytes = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(done),
        Err(e) => return Err(Error::io(path, e)),
    };
    // A line that does not parse (torn, or damaged: not UTF-8) is not done: its request is asked again.
    for line in bytes.split(|&b| b == b'\n') {
        if let Ok(l) = serde_json::from_slice::<LogLine>(line) {
            if l.status == "ok" {
                done.insert(l.key.clone(), l);
            }
        }
    }
    Ok(done)
}

/// Result of one request after retries.
struct Outcome {
    status: String,
    answer: Option<String>,
    usage: Option<Value>,
    error: Option<String>,
    attempts: u32,
    /// A secret was scrubbed from the response.
    redacted: bool,
}

fn retryable(code: u16) -> bool {
    matches!(code, 408 | 409 | 429) || (500..600).contains(&code)
}

/// Backoff before retry `attempt` (0-based): min(cap, base·2^attempt) + jitter in [0, half of that], or
/// Retry-After seconds (capped) when the server sent it.
pub fn backoff(
    cfg: &RunConfig,
    attempt: u32,
    retry_after: Option<f64>,
    rng: &mut ChaCha8Rng,
) -> Duration {
    let cap = cfg.backoff_cap_ms as f64;
    if let Some(s) = retry_after {
        return Duration::from_millis((s * 1000.0).clamp(0.0, cap) as u64);
    }
    let base = (cfg.backoff_ms as f64 * 2f64.powi(attempt.min(30) as i32)).min(cap);
    let jitter = rng.random_range(0.0..=base / 2.0);
    Duration::from_millis((base + jitter) as u64)
}

/// One request's HTTP exchange, redirects resolved.
enum Exchange {
    /// No response: connection refused or reset, timeout, a body that could not be read whole.
    Transport(String),
    /// A redirect that is not followed (see [`follow`]); never retried.
    Refused(String),
    /// A response with its whole body.
    Response {
        code: u16,
        retry_after: Option<f64>,
        text: String,
    },
}

/// Longest response body read (bytes); a longer one is an error, not retried.
pub const MAX_BODY_BYTES: u64 = 16 << 20;

/// Redirect hops followed at most.
pub const MAX_REDIRECTS: usize = 5;

/// (scheme, host lower-cased, port) of an absolute URL.
fn origin(url: &str) -> Option<(String, String, u16)> {
    let u: ureq::http::Uri = url.parse().ok()?;
    let scheme = u.scheme_str()?.to_ascii_lowercase();
    let host = u.host()?.to_ascii_lowercase();
    let port = u.port_u16().or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    })?;
    Some((scheme, host, port))
}

/// `location` resolved against `base` (absolute, scheme-relative, absolute-path or relative-path forms).
fn resolve(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_string();
    }
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let scheme = base.get(..scheme_end.saturating_sub(3)).unwrap_or("http");
    if let Some(rest) = location.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    let after = base.get(scheme_end..).unwrap_or_default();
    let path_start = scheme_end + after.find(['/', '?', '#']).unwrap_or(after.len());
    let root = base.get(..path_start).unwrap_or(base);
    if location.starts_with('/') {
        return format!("{root}{location}");
    }
    let path = base.get(path_start..).unwrap_or_default();
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let dir = path
        .rfind('/')
        .map_or("/", |i| path.get(..=i).unwrap_or("/"));
    format!("{root}{dir}{location}")
}

/// Whether a redirect from `from` to `to` with status `code` is followed: only 307 and 308 (which keep the
/// method and body: a 301, 302 or 303 would turn the POST into a GET, and its answer would be some other
/// page's), and only to the same host, on the same scheme and port or from http to https (the API key is
/// sent again, so never to another host, never downgraded to plain http). `Err` says why not.
fn follow(code: u16, from: &str, to: &str) -> std::result::Result<(), &'static str> {
    if !matches!(code, 307 | 308) {
        return Err("following it would turn the POST into a GET");
    }
    let (Some(a), Some(b)) = (origin(from), origin(to)) else {
        return Err("its target is not an http(s) URL");
    };
    if a.1 != b.1 {
        return Err("it points to another host");
    }
    match (a.0.as_str(), b.0.as_str()) {
        (x, y) if x == y && a.2 == b.2 => Ok(()),
        ("http", "https") => Ok(()),
        ("https", "http") => Err("it downgrades https to http"),
        _ => Err("it points to another port"),
    }
}

/// POST `body` to `url`, following the redirects [`follow`] allows, and read the whole response.
fn exchange(
    agent: &ureq::Agent,
    url: &str,
    key: Option<&str>,
    body: &Value,
    secrets: &Secrets,
) -> Exchange {
    let mut url = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        let mut r = agent.post(&url).header("Content-Type", "application/json");
        if let Some(k) = key {
            r = r.header("Authorization", format!("Bearer {k}"));
        }
        let mut resp = match r.send_json(body) {
            Ok(resp) => resp,
            Err(e) => return Exchange::Transport(secrets.scrub(&e.to_string()).into_owned()),
        };
        let code = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let retry_after = header("retry-after").and_then(|s| s.trim().parse::<f64>().ok());
        if (300..400).contains(&code) {
            let Some(loc) = header("location") else {
                return Exchange::Refused(format!(
                    "HTTP {code} redirect without a Location header"
                ));
            };
            let next = resolve(&url, loc.trim());
            if let Err(why) = follow(code, &url, &next) {
                return Exchange::Refused(format!(
                    "HTTP {code} redirect to {} not followed: {why}; point --base-url at the final address",
                    secrets.scrub(&redact_url(&next))
                ));
            }
            url = next;
            continue;
        }
        // A body that cannot be read whole (connection reset, cut short, timeout) is no response: retried.
        return match resp
            .body_mut()
            .with_config()
            .limit(MAX_BODY_BYTES)
            .lossy_utf8(true)
            .read_to_string()
        {
            Ok(text) => Exchange::Response {
                code,
                retry_after,
                text,
            },
            Err(ureq::Error::BodyExceedsLimit(n)) => Exchange::Refused(format!(
                "HTTP {code}: response body longer than {n} bytes (MAX_BODY_BYTES)"
            )),
            Err(e) => Exchange::Transport(format!(
                "HTTP {code}, reading the body: {}",
                secrets.scrub(&e.to_string())
            )),
        };
    }
    Exchange::Refused(format!("more than {MAX_REDIRECTS} redirects"))
}

fn failed(error: String, attempts: u32) -> Outcome {
    Outcome {
        status: "error".into(),
        answer: None,
        usage: None,
        error: Some(error),
        attempts,
        redacted: false,
    }
}

fn ask(
    agent: &ureq::Agent,
    cfg: &RunConfig,
    key: Option<&str>,
    secrets: &Secrets,
    req: &Request,
    seed: Option<u64>,
    rng: &mut ChaCha8Rng,
) -> Outcome {
    let url = format!("{}/{}", cfg.base_url.trim_end_matches('/'), cfg.api.path());
    let body = request_body(cfg, req, &params(cfg, seed, req));
    let mut attempt = 0;
    let mut scrubbed = false;
    let fail = |e: String, attempts: u32, scrubbed: bool| Outcome {
        redacted: scrubbed,
        ..failed(e, attempts)
    };
    loop {
        let (last_err, retry, retry_after) = match exchange(agent, &url, key, &body, secrets) {
            Exchange::Transport(e) => (format!("transport: {e}"), true, None),
            Exchange::Refused(e) => return fail(e, attempt + 1, scrubbed),
            Exchange::Response {
                code,
                retry_after,
                mut text,
            } => {
                scrubbed |= secrets.scrub_string(&mut text);
                if (200..300).contains(&code) {
                    let v: Value = match serde_json::from_str(&text) {
                        Ok(v) => v,
                        Err(e) => {
                            return fail(
                                format!("bad JSON from server: {e}"),
                                attempt + 1,
                                scrubbed,
                            );
                        }
                    };
                    // Scrubbed again once decoded: a server may JSON-escape a secret (`\/`, `\u…`).
                    let mut redacted = scrubbed;
                    let answer = answer_text(cfg.api, &v).map(|mut a| {
                        redacted |= secrets.scrub_string(&mut a);
                        a
                    });
                    let mut usage = v.get("usage").cloned().map(normalise_usage);
                    if let Some(u) = usage.as_mut() {
                        redacted |= secrets.scrub_value(u);
                    }
                    let empty = answer.as_deref().is_none_or(|a| a.trim().is_empty());
                    return Outcome {
                        status: if empty { "empty" } else { "ok" }.into(),
                        answer,
                        usage,
                        error: None,
                        attempts: attempt + 1,
                        redacted,
                    };
                }
                (
                    format!(
                        "HTTP {code}: {}",
                        text.chars().take(300).collect::<String>()
                    ),
                    retryable(code),
                    retry_after,
                )
            }
        };
        if !retry || attempt >= cfg.retries {
            return fail(last_err, attempt + 1, scrubbed);
        }
        std::thread::sleep(backoff(cfg, attempt, retry_after, rng));
        attempt += 1;
    }
}

/// Summary of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunSummary {
    pub requests: usize,
    /// Answered in earlier runs (skipped).
    pub cached: usize,
    /// Newly answered in this run.
    pub answered: usize,
    pub empty: usize,
    pub errors: usize,
    /// Not attempted (limit reached).
    pub pending: usize,
    /// Responses from which the API key or the URL's password was scrubbed (the server echoed it).
    pub redacted: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

/// The answers of one pass of [`ask_all`].
#[derive(Debug, Default)]
pub struct Answered {
    /// Cache key of each request, in request order.
    pub keys: Vec<String>,
    /// key → the `ok` line (from earlier runs and this one).
    pub answers: HashMap<String, LogLine>,
    /// Keys answered empty in this pass (logged as `empty`, not cached, so asked again by a later run).
    pub empty: HashSet<String>,
    /// Counts of this pass (token totals are left at 0: they are summed over the answers by the caller).
    pub summary: RunSummary,
}

/// Resolve the API key from the variable `--api-key-env` names.
fn api_key(cfg: &RunConfig) -> Result<Option<String>> {
    match &cfg.api_key_env {
        Some(var) => Ok(Some(std::env::var(var).map_err(|_| {
            Error::Config(format!(
                "environment variable {var} (named by --api-key-env) is not set"
            ))
        })?)),
        None => Ok(None),
    }
}

/// The runner's core, shared by `eval run` and `sword translate`: ask every request whose key has no `ok`
/// line in the append-only log `log_path` (at most `cfg.max_requests` new ones), appending one line per
/// finished request as soon as it finishes. `seeds[i]` (when `seeds` is not empty) adds a `seed` to request
/// `i`'s parameters and key. `what` names the progress counter.
pub fn ask_all(
    log_path: &Path,
    requests: &[Request],
    seeds: &[Option<u64>],
    cfg: &RunConfig,
    what: &str,
) -> Result<Answered> {
    if !seeds.is_empty() && seeds.len() != requests.len() {
        return Err(Error::Config(format!(
            "{} seeds for {} requests",
            seeds.len(),
            requests.len()
        )));
    }
    if let Some(parent) = log_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).at(parent)?;
    }
    // Requests written for the Responses API (tools, `text.format`) mean nothing to Chat Completions;
    // plain requests work with either.
    if let Some(r) = requests.iter().find(|r| wants_responses(r)) {
        if cfg.api != Api::Responses {
            return Err(Error::Config(format!(
                "request {} was written for the Responses API (its web_search tool); pass --api responses",
                r.id
            )));
        }
    }
    let key = api_key(cfg)?;
    let secrets = Secrets::new(key.as_deref(), &cfg.base_url);
    let done = read_log(log_path)?;
    let seed_of = |i: usize| seeds.get(i).copied().flatten();
    let keys: Vec<String> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            cache_key(
                &cfg.base_url,
                &cfg.model,
                &r.messages,
                &params(cfg, seed_of(i), r),
            )
        })
        .collect();
    let mut seen = HashSet::new();
    let mut todo: Vec<usize> = (0..requests.len())
        .filter(|&i| !done.contains_key(&keys[i]) && seen.insert(keys[i].clone()))
        .collect();
    let mut summary = RunSummary {
        requests: requests.len(),
        cached: requests.len() - todo.len(),
        ..Default::default()
    };
    if let Some(m) = cfg.max_requests {
        summary.pending = todo.len().saturating_sub(m);
        todo.truncate(m);
    }
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
        .at(log_path)?;
    // A run killed mid-write leaves a torn last line: end it so the next line starts cleanly.
    let len = log.metadata().at(log_path)?.len();
    if len > 0 {
        use std::io::{Read, Seek, SeekFrom};
        let mut last = [0u8; 1];
        let mut r = std::fs::File::open(log_path).at(log_path)?;
        r.seek(SeekFrom::Start(len - 1)).at(log_path)?;
        r.read_exact(&mut last).at(log_path)?;
        if last[0] != b'\n' {
            log.write_all(b"\n").at(log_path)?;
        }
    }
    let agent: ureq::Agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs_f64(cfg.timeout.max(0.001))))
            .http_status_as_error(false)
            // Redirects are resolved by `exchange`: the client's own would turn the POST into a GET.
            .max_redirects(0)
            .build(),
    );
    let progress = crate::core::progress::Progress::new(
        what,
        Some(todo.len() as u64),
        crate::core::progress::Unit::Items("requests"),
    );
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
    let mut new_lines: HashMap<String, LogLine> = HashMap::new();
    let mut empty = HashSet::new();
    let mut write_err: Option<Error> = None;
    std::thread::scope(|s| {
        for w in 0..cfg.concurrency.max(1) {
            let tx = tx.clone();
            let (todo, next, agent, key, secrets) =
                (&todo, &next, &agent, key.as_deref(), &secrets);
            s.spawn(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(w as u64);
                loop {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = todo.get(j) else { break };
                    let out = ask(agent, cfg, key, secrets, &requests[i], seed_of(i), &mut rng);
                    if tx.send((i, out)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, out) in rx {
            let out_redacted = out.redacted;
            let line = LogLine {
                key: keys[i].clone(),
                id: requests[i].id.clone(),
                status: out.status,
                answer: out.answer,
                usage: out.usage,
                error: out.error,
                attempts: out.attempts,
            };
            if out_redacted {
                summary.redacted += 1;
            }
            match line.status.as_str() {
                "ok" => summary.answered += 1,
                "empty" => {
                    summary.empty += 1;
                    empty.insert(line.key.clone());
                }
                _ => summary.errors += 1,
            }
            progress.inc(1);
            progress.set_message(format!(
                "{} ok, {} empty, {} errors",
                summary.answered, summary.empty, summary.errors
            ));
            if write_err.is_none() {
                let mut text = serde_json::to_string(&line).unwrap_or_default();
                text.push('\n');
                if let Err(e) = log.write_all(text.as_bytes()).and_then(|_| log.flush()) {
                    write_err = Some(Error::io(log_path, e));
                }
            }
            if line.status == "ok" {
                new_lines.insert(line.key.clone(), line);
            }
        }
    });
    progress.finish();
    if let Some(e) = write_err {
        return Err(e);
    }
    let mut answers = done;
    answers.extend(new_lines);
    Ok(Answered {
        keys,
        answers,
        empty,
        summary,
    })
}

/// Sum the token counts of the answered requests, each distinct request once.
pub fn add_tokens(summary: &mut RunSummary, keys: &[String], answers: &HashMap<String, LogLine>) {
    summary.prompt_tokens = 0;
    summary.completion_tokens = 0;
    summary.total_tokens = 0;
    // A key asked by several requests (the same fact in several answers) was sent once: counted once.
    let mut seen = HashSet::new();
    for k in keys.iter().filter(|k| seen.insert(k.as_str())) {
        if let Some(u) = answers.get(k).and_then(|l| l.usage.as_ref()) {
            let g = |n: &str| u.get(n).and_then(Value::as_u64).unwrap_or(0);
            summary.prompt_tokens += g("prompt_tokens");
            summary.completion_tokens += g("completion_tokens");
            summary.total_tokens += g("total_tokens");
        }
    }
}

/// Run every request not already answered in `dir/answers.jsonl`, then write `samples.jsonl` and
/// `results.json`.
pub fn run(dir: &Path, requests: &[Request], cfg: &RunConfig) -> Result<RunSummary> {
    std::fs::create_dir_all(dir).at(dir)?;
    let Answered {
        keys,
        answers,
        mut summary,
        ..
    } = ask_all(&dir.join("answers.jsonl"), requests, &[], cfg, "eval run")?;
    write_outputs(
        dir,
        requests,
        &keys,
        &answers,
        Some(&cfg.model),
        &mut summary,
    )?;
    // Provenance: the settings (the key's variable name only, never its value), counts and output hashes.
    let mut m = crate::store::Manifest::new("eval");
    m.config = serde_json::to_value(cfg.redacted()).unwrap_or_default();
    if let Value::Object(counts) = serde_json::to_value(&summary).unwrap_or_default() {
        for (k, v) in counts {
            m.counts.insert(k, v.as_u64().unwrap_or(0));
        }
    }
    m.add_outputs(dir, &["samples.jsonl", "samples.parquet", "results.json"])?;
    m.write(dir)?;
    Ok(summary)
}

/// Write `samples.jsonl` (every request, answered or not) and `results.json` from the answered lines.
fn write_outputs(
    dir: &Path,
    requests: &[Request],
    keys: &[String],
    answers: &HashMap<String, LogLine>,
    model: Option<&str>,
    summary: &mut RunSummary,
) -> Result<()> {
    let mut samples = String::new();
    add_tokens(summary, keys, answers);
    for (r, k) in requests.iter().zip(keys) {
        let a = answers.get(k);
        let usage = a.and_then(|l| l.usage.clone());
        let mut v = json!({
            "id": r.id, "suite": r.suite, "meta": r.meta, "messages": r.messages,
            "answer": a.and_then(|l| l.answer.clone()), "usage": usage,
        });
        if let (Some(m), Some(o)) = (model, v.as_object_mut()) {
            o.insert("model".into(), json!(m));
        }
        samples.push_str(&v.to_string());
        samples.push('\n');
    }
    crate::store::write_atomic(dir.join("samples.jsonl"), |w| {
        w.write_all(samples.as_bytes())
    })?;
    let rows: Vec<SampleRow> = requests
        .iter()
        .zip(keys)
        .map(|(r, k)| {
            let a = answers.get(k);
            let answer = a.and_then(|l| l.answer.clone());
            let usage = a.and_then(|l| l.usage.clone()).unwrap_or(Value::Null);
            let tok = |n: &str| usage.get(n).and_then(Value::as_u64);
            let prompt = r
                .messages
                .iter()
                .map(|m| format!("[{}] {}", m.role, m.content))
                .collect::<Vec<_>>()
                .join("\n");
            SampleRow {
                parsed: parsed_outcome(r, answer.as_deref()),
                id: r.id.clone(),
                suite: r.suite.clone(),
                prompt,
                answer,
                prompt_tokens: tok("prompt_tokens"),
                completion_tokens: tok("completion_tokens"),
            }
        })
        .collect();
    let pq = dir.join("samples.parquet");
    let bytes = samples_parquet(&rows, &pq)?;
    crate::store::write_atomic(&pq, |w| w.write_all(&bytes))?;
    let mut s = serde_json::to_string_pretty(summary).unwrap_or_default();
    s.push('\n');
    crate::store::write_atomic(dir.join("results.json"), |w| w.write_all(s.as_bytes()))?;
    Ok(())
}

/// One row of `samples.parquet`.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleRow {
    pub id: String,
    pub suite: String,
    /// The messages, one `[role] content` per line.
    pub prompt: String,
    /// Raw answer (null when none was obtained).
    pub answer: Option<String>,
    /// Parsed outcome: SWORD true/false/unparsed; sycophancy yes/no/uncertain/unparsed; AdversaRiskQA
    /// `valid` or the invalid class (empty, echo, template_leak, fragment); `none` without an answer.
    pub parsed: String,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

/// The parsed outcome of an answer to a request, by suite.
pub fn parsed_outcome(r: &Request, answer: Option<&str>) -> String {
    let Some(a) = answer else {
        return "none".into();
    };
    match r.suite.as_str() {
        "sword" => super::parse::parse_true_false(a).as_str().into(),
        "sycophancy" => super::parse::parse_yes_no(a).as_str().into(),
        "adversariskqa" => {
            let prompt = r.meta.get("prompt").and_then(Value::as_str).unwrap_or("");
            match super::parse::detect_invalid(a, prompt) {
                None => "valid".into(),
                Some(k) => serde_json::to_value(k)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            }
        }
        _ => "raw".into(),
    }
}

/// `samples.parquet` bytes: id, suite, prompt, answer, parsed (utf8), prompt_tokens, completion_tokens
/// (uint64, null when unknown).
pub fn samples_parquet(rows: &[SampleRow], path: &Path) -> Result<Vec<u8>> {
    use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("suite", DataType::Utf8, false),
        Field::new("prompt", DataType::Utf8, false),
        Field::new("answer", DataType::Utf8, true),
        Field::new("parsed", DataType::Utf8, false),
        Field::new("prompt_tokens", DataType::UInt64, true),
        Field::new("completion_tokens", DataType::UInt64, true),
    ]));
    let s = |f: &dyn Fn(&SampleRow) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    };
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            s(&|r| r.id.clone()),
            s(&|r| r.suite.clone()),
            s(&|r| r.prompt.clone()),
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.answer.clone()).collect::<Vec<_>>(),
            )),
            s(&|r| r.parsed.clone()),
            Arc::new(UInt64Array::from(
                rows.iter().map(|r| r.prompt_tokens).collect::<Vec<_>>(),
            )),
            Arc::new(UInt64Array::from(
                rows.iter().map(|r| r.completion_tokens).collect::<Vec<_>>(),
            )),
        ],
    )
    .map_err(|e| Error::parquet(path, e))?;
    let mut w = parquet::arrow::ArrowWriter::try_new(
        Vec::new(),
        schema,
        Some(crate::store::tables::writer_props()),
    )
    .map_err(|e| Error::parquet(path, e))?;
    w.write(&batch).map_err(|e| Error::parquet(path, e))?;
    w.into_inner().map_err(|e| Error::parquet(path, e))
}

/// Offline mode: the requests as OpenAI Batch input lines (`custom_id` = request id).
pub fn batch_lines(
    requests: &[Request],
    cfg_model: &str,
    temperature: f64,
    max_tokens: u32,
) -> String {
    let mut out = String::new();
    for r in requests {
        let v = json!({
            "custom_id": r.id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": cfg_model, "messages": r.messages, "temperature": temperature, "max_tokens": max_tokens},
        });
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

/// Batch answers: request id → (answer, usage).
pub type BatchAnswers = HashMap<String, (String, Option<Value>)>;

/// Read OpenAI Batch output (`custom_id`, `response.status_code`, `response.body`) into id → (answer, usage);
/// failed or empty entries are left out and counted. Returns (answers, failed count).
pub fn read_batch_output(path: &Path) -> Result<(BatchAnswers, usize)> {
    let f = std::fs::File::open(path).at(path)?;
    let mut out = HashMap::new();
    let mut failed = 0;
    for (_, v) in super::jsonl::read_values(std::io::BufReader::new(f), path)? {
        let id = v["custom_id"].as_str().unwrap_or_default().to_string();
        let code = v["response"]["status_code"].as_u64().unwrap_or(0);
        let body = &v["response"]["body"];
        let answer = body
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str);
        match answer {
            Some(a) if code == 200 && !a.trim().is_empty() && !id.is_empty() => {
                out.insert(id, (a.to_string(), body.get("usage").cloned()));
            }
            _ => failed += 1,
        }
    }
    Ok((out, failed))
}

/// Offline mode, read back: write `samples.jsonl` / `results.json` in `dir` from Batch output.
pub fn import_batch(
    dir: &Path,
    requests: &[Request],
    batch_output: &Path,
    model: Option<&str>,
) -> Result<RunSummary> {
    std::fs::create_dir_all(dir).at(dir)?;
    let (answers, failed) = read_batch_output(batch_output)?;
    let keys: Vec<String> = requests.iter().map(|r| r.id.clone()).collect();
    let lines: HashMap<String, LogLine> = answers
        .into_iter()
        .map(|(id, (a, u))| {
            (
                id.clone(),
                LogLine {
                    key: id.clone(),
                    id,
                    status: "ok".into(),
                    answer: Some(a),
                    usage: u,
                    error: None,
                    attempts: 1,
                },
            )
        })
        .collect();
    let mut summary = RunSummary {
        requests: requests.len(),
        answered: keys.iter().filter(|k| lines.contains_key(*k)).count(),
        errors: failed,
        ..Default::default()
    };
    summary.pending = summary.requests - summary.answered;
    write_outputs(dir, requests, &keys, &lines, model, &mut summary)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> RunConfig {
        RunConfig {
            base_url: "http://x/v1".into(),
            model: "m".into(),
            api_key_env: None,
            concurrency: 1,
            timeout: 5.0,
            retries: 3,
            backoff_ms: 100,
            backoff_cap_ms: 1000,
            temperature: 0.0,
            max_tokens: 16,
            max_requests: None,
            api: Api::Chat,
        }
    }

    #[test]
    fn backoff_is_capped_with_bounded_jitter() {
        let c = cfg();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for attempt in 0..10 {
            let base = (100.0 * 2f64.powi(attempt)).min(1000.0);
            let d = backoff(&c, attempt as u32, None, &mut rng).as_millis() as f64;
            assert!(
                d >= base.floor() && d <= (base * 1.5).ceil(),
                "attempt {attempt}: {d}"
            );
        }
        assert_eq!(
            backoff(&c, 0, Some(0.25), &mut rng),
            Duration::from_millis(250)
        );
        assert_eq!(
            backoff(&c, 0, Some(99.0), &mut rng),
            Duration::from_millis(1000)
        );
    }

    #[test]
    fn cache_key_depends_on_every_part() {
        let m = vec![Message {
            role: "user".into(),
            content: "hi".into(),
        }];
        let p = json!({"temperature": 0.0});
        let k = cache_key("http://a/v1", "m", &m, &p);
        assert_eq!(k, cache_key("http://a/v1/", "m", &m, &p));
        assert_ne!(k, cache_key("http://b/v1", "m", &m, &p));
        assert_ne!(k, cache_key("http://a/v1", "m2", &m, &p));
        assert_ne!(
            k,
            cache_key("http://a/v1", "m", &m, &json!({"temperature": 1.0}))
        );
        let m2 = vec![Message {
            role: "user".into(),
            content: "hi!".into(),
        }];
        assert_ne!(k, cache_key("http://a/v1", "m", &m2, &p));
        assert_eq!(k.len(), 32);
    }

    #[test]
    fn samples_parquet_round_trip() {
        use arrow_array::{Array, StringArray, UInt64Array};
        let row = |id: &str, answer: Option<&str>, parsed: &str, pt: Option<u64>| SampleRow {
            id: id.into(),
            suite: "sword".into(),
            prompt: "[user] x".into(),
            answer: answer.map(str::to_string),
            parsed: parsed.into(),
            prompt_tokens: pt,
            completion_tokens: pt,
        };
        let rows = vec![
            row("a", Some("False"), "false", Some(3)),
            row("b", None, "none", None),
        ];
        let p = Path::new("mem");
        let bytes = samples_parquet(&rows, p).unwrap();
        let batches = crate::store::tables::read_batches(bytes::Bytes::from(bytes), p).unwrap();
        let b = &batches[0];
        let ans = b.column_by_name("answer").unwrap();
        let ans = ans.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(ans.value(0), "False");
        assert!(ans.is_null(1));
        let parsed = crate::store::tables::string_column(b, "parsed", p).unwrap();
        assert_eq!((parsed.value(0), parsed.value(1)), ("false", "none"));
        let pt = b.column_by_name("prompt_tokens").unwrap();
        let pt = pt.as_any().downcast_ref::<UInt64Array>().unwrap();
        assert_eq!(pt.value(0), 3);
        assert!(pt.is_null(1));
    }

    #[test]
    fn retryable_codes() {
        for c in [408, 409, 429, 500, 502, 503, 599] {
            assert!(retryable(c), "{c}");
        }
        for c in [400, 401, 403, 404, 422] {
            assert!(!retryable(c), "{c}");
        }
    }
}
