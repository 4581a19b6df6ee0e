//! The OpenAI-compatible client: one request with bounded retries (exponential backoff with jitter, or the
//! server's `Retry-After`), redirects followed only within the same origin, bodies capped, the API key read
//! from an environment variable and never written or printed ([`super::secret`]); the Chat Completions and
//! the Responses API.
//!
//! * **Retries**: on transport errors and HTTP 408, 409, 429 and 5xx, up to `retries` times, waiting
//!   `min(cap, base·2^attempt)` plus uniform jitter in [0, that/2], or the server's `Retry-After` (seconds)
//!   when given (also capped). Other 4xx fail at once.
//! * **API key**: read from the environment variable named by `--api-key-env`; sent only as the
//!   `Authorization` header; never logged or written.

use super::request::Request;
use super::secret::{redact_url, Secrets};
use crate::core::error::{Error, Result};
use rand::rngs::ChaCha8Rng;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
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
pub(crate) fn params(cfg: &RunConfig, seed: Option<u64>, req: &Request) -> Value {
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
pub(crate) fn request_body(cfg: &RunConfig, req: &Request, params: &Value) -> Value {
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
pub(crate) fn answer_text(api: Api, v: &Value) -> Option<String> {
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
pub(crate) fn normalise_usage(mut u: Value) -> Value {
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

/// Result of one request after retries.
pub(crate) struct Outcome {
    pub(crate) status: String,
    pub(crate) answer: Option<String>,
    pub(crate) usage: Option<Value>,
    pub(crate) error: Option<String>,
    pub(crate) attempts: u32,
    /// A secret was scrubbed from the response.
    pub(crate) redacted: bool,
}

pub(crate) fn retryable(code: u16) -> bool {
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
pub(crate) enum Exchange {
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
pub(crate) fn origin(url: &str) -> Option<(String, String, u16)> {
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
pub(crate) fn resolve(base: &str, location: &str) -> String {
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
pub(crate) fn follow(code: u16, from: &str, to: &str) -> std::result::Result<(), &'static str> {
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
pub(crate) fn exchange(
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

pub(crate) fn failed(error: String, attempts: u32) -> Outcome {
    Outcome {
        status: "error".into(),
        answer: None,
        usage: None,
        error: Some(error),
        attempts,
        redacted: false,
    }
}

pub(crate) fn ask(
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

/// Resolve the API key from the variable `--api-key-env` names.
pub(crate) fn api_key(cfg: &RunConfig) -> Result<Option<String>> {
    match &cfg.api_key_env {
        Some(var) => Ok(Some(std::env::var(var).map_err(|_| {
            Error::Config(format!(
                "environment variable {var} (named by --api-key-env) is not set"
            ))
        })?)),
        None => Ok(None),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::SeedableRng;

    pub(crate) fn cfg() -> RunConfig {
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
    fn retryable_codes() {
        for c in [408, 409, 429, 500, 502, 503, 599] {
            assert!(retryable(c), "{c}");
        }
        for c in [400, 401, 403, 404, 422] {
            assert!(!retryable(c), "{c}");
        }
    }
}
