//! Resumable asking: the append-only answer log (`answers.jsonl`: one line per finished attempt sequence,
//! appended and flushed as soon as it completes, so a killed run loses at most the requests in flight), keyed
//! by xxh3-128 of (base URL, model, messages, generation parameters) so that changing any of them asks again;
//! a rerun skips the keys whose line says `status: "ok"` (errors and empty answers are logged but never count as
//! done); the requests in flight bounded by `--concurrency`.

use super::client::{api_key, ask, params, wants_responses, Api, Outcome, RunConfig};
use super::request::{Message, Request};
use super::secret::{redact_url, Secrets};
use crate::core::error::{Error, IoContext, Result};
use rand::rngs::ChaCha8Rng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
