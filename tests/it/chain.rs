//! The evaluation chain against a deterministic OpenAI-compatible test server on 127.0.0.1: `sword run` →
//! `sword translate` → `sword eval prompts/run/score`, and `make eval`.
//!
//! The server's model: translations are the three labels joined by spaces (a sentence that uses them, in the
//! language's own script since the labels are), except German (first answer: the bracketed triple echoed)
//! and Japanese (first answer: English text), which answer well only when asked again with a seed; French
//! answers carry a `<think>` block. Every SWORD question is answered "False", so the known accuracies are
//! exactly 1 for SS/OS/PSS/POS and 0 for ORG in every language.

use crate::util::{runner_args, small_configs, small_dump, small_run_args, Workdir};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// (request content, seed) → times the server answered it (across server restarts).
type Answered = Arc<Mutex<HashMap<(String, Option<u64>), usize>>>;

struct Server {
    url: String,
    port: u16,
    answered: Answered,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Server {
    fn total(&self) -> usize {
        self.answered.lock().unwrap().values().sum()
    }

    /// Wait (bounded) until the server thread has ended by itself.
    fn wait_dead(&mut self) {
        if let Some(h) = self.handle.take() {
            h.join().unwrap();
        }
    }
}

/// The deterministic model's answer to one request.
fn model_answer(content: &str, system: &str, seed: Option<u64>) -> String {
    const TRIPLE: &str = "Generate one sentence for this input triple: [";
    if let Some(i) = content.find(TRIPLE) {
        let lang = content
            .strip_prefix("You are a ")
            .and_then(|s| s.split(" language").next())
            .unwrap_or("");
        let bracket = &content[i + TRIPLE.len()..content.len() - 1];
        let sentence = format!("{}.", bracket.replace(", ", " "));
        return match (lang, seed) {
            ("German", None) => format!("Here: [{bracket}]"),
            ("Japanese", None) => "This is a sentence.".into(),
            ("French", _) => format!("<think>Une phrase.</think>{sentence}"),
            _ => sentence,
        };
    }
    if content.ends_with("Is the sentence True or False?") {
        return "False".into();
    }
    if content.contains("Reply with exactly one word: Correct or Incorrect.") {
        return "Correct".into();
    }
    if content.contains("请只回答") {
        return "否".into();
    }
    if !system.is_empty() {
        return "That premise is not right.".into();
    }
    "?".into()
}

/// Start the server on `port` (0 = any free one). It answers until `budget` answers (then it "dies": the
/// request in hand is dropped and the listener closed), until stopped, or after 10 000 connections or
/// 300 s, whichever comes first.
fn start(port: u16, answered: Answered, budget: Option<usize>) -> Server {
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (stop2, answered2) = (stop.clone(), answered.clone());
    let handle = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(300);
        let mut mine = 0usize;
        let mut conns = 0usize;
        while !stop2.load(Ordering::Relaxed) && Instant::now() < deadline && conns < 10_000 {
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
            let mut stream = stream;
            let Some(body) = read_request(&stream) else {
                continue;
            };
            if budget.is_some_and(|b| mine >= b) {
                drop(stream);
                return;
            }
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let msgs = v["messages"].as_array().cloned().unwrap_or_default();
            let content = msgs
                .last()
                .and_then(|m| m["content"].as_str())
                .unwrap_or("")
                .to_string();
            let system = msgs
                .iter()
                .find(|m| m["role"] == "system")
                .and_then(|m| m["content"].as_str())
                .unwrap_or("")
                .to_string();
            let seed = v["seed"].as_u64();
            let answer = model_answer(&content, &system, seed);
            let body = serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": answer}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
            })
            .to_string();
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            if stream.write_all(resp.as_bytes()).is_ok() {
                mine += 1;
                *answered2
                    .lock()
                    .unwrap()
                    .entry((content, seed))
                    .or_default() += 1;
            }
        }
    });
    Server {
        url: format!("http://127.0.0.1:{port}/v1"),
        port,
        answered,
        stop,
        handle: Some(handle),
    }
}

/// Read one HTTP request; its body.
fn read_request(stream: &std::net::TcpStream) -> Option<Vec<u8>> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end().to_ascii_lowercase();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.strip_prefix("content-length:") {
            len = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// A small run directory from `sword run` on a generated dump (8 originals, 8 languages).
fn small_run(wd: &Workdir) {
    small_configs(wd, 8);
    let dump = small_dump(wd);
    wd.run_ok(&small_run_args("2", &dump, "run"));
}

/// Exported statements (the original and each variant distort could draw) of the first `n` originals, read
/// from distortions.parquet: not every original gets all four variants (a pool can run dry or every candidate
/// be true), so the count is read rather than assumed to be 5 per original.
fn statements_of_first(wd: &Workdir, n: u32) -> usize {
    let rows = sword::distort::read_distortions_file(&wd.join("run/distortions.parquet")).unwrap();
    let originals = rows.iter().filter(|d| d.strategy.as_str() == "ORG").count();
    assert_eq!(originals, 8, "the small run samples 8 originals");
    rows.iter().filter(|d| d.original_id < n).count()
}

/// custom_id → prompt content of the export's translation_requests.jsonl (the Batch path: an independent
/// rendering of the same prompts).
fn batch_prompts(wd: &Workdir) -> HashMap<String, String> {
    String::from_utf8(wd.read("run/translation_requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["custom_id"].as_str().unwrap().to_string(),
                v["body"]["messages"][0]["content"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect()
}

fn translate_args<'a>(url: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    runner_args(&["translate", "--out", out], url, extra)
}

const LANGS: [&str; 8] = ["en", "fr", "de", "es", "it", "pt", "ko", "ja"];

#[test]
fn translate_checks_retries_and_scores_exactly_through_the_test_server() {
    let wd = Workdir::new();
    small_run(&wd);
    let prompts = batch_prompts(&wd);
    let answered: Answered = Arc::default();
    let server = start(0, answered.clone(), None);

    // Without retries: German echoes and Japanese wrong-script answers are kept but marked.
    std::fs::create_dir_all(wd.join("run0")).unwrap();
    std::fs::copy(wd.join("run/sword.parquet"), wd.join("run0/sword.parquet")).unwrap();
    let out = wd.run_ok(&translate_args(
        &server.url,
        "run0",
        &["--concurrency", "3"],
    ));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pairs = prompts.len();
    let per_lang = pairs / 8;
    // Every exported statement (8 originals with the variants distort could draw) in each of 8 languages.
    assert_eq!(statements_of_first(&wd, 8) * 8, pairs);
    assert_eq!(s["pairs"], pairs);
    assert_eq!(s["answered"], pairs);
    assert_eq!(s["text_ok"], pairs - 2 * per_lang);
    assert_eq!(s["reasons"]["echo"], per_lang);
    assert_eq!(s["reasons"]["wrong_script"], per_lang);
    assert_eq!(s["think_stripped"], per_lang);
    assert_eq!(s["languages"]["de"]["text_ok_share"], 0.0);
    assert_eq!(s["languages"]["ko"]["text_ok_share"], 1.0);
    let texts =
        sword::translate::read_texts_file(&wd.join("run0/statements_text.parquet")).unwrap();
    assert_eq!(texts.len(), pairs);
    for t in &texts {
        let (ok, reason) = (t.text_ok, t.text_reason.as_deref());
        match t.language.as_str() {
            "de" => assert_eq!((ok, reason), (Some(false), Some("echo")), "{t:?}"),
            "ja" => assert_eq!((ok, reason), (Some(false), Some("wrong_script"))),
            _ => assert_eq!((ok, reason), (Some(true), None), "{t:?}"),
        }
        if t.language == "fr" {
            assert!(!t.text.contains("think"), "{t:?}");
        }
    }
    // Only text_ok rows become SWORD requests, unless asked.
    wd.run_ok(&[
        "eval",
        "prompts",
        "--suite",
        "sword",
        "--input",
        "run0/statements_text.parquet",
        "--out",
        "req0.jsonl",
    ]);
    let n_req = String::from_utf8(wd.read("req0.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(n_req, pairs - 2 * per_lang);
    wd.run_ok(&[
        "eval",
        "prompts",
        "--suite",
        "sword",
        "--input",
        "run0/statements_text.parquet",
        "--include-bad-text",
        "--out",
        "req0all.jsonl",
    ]);
    let n_all = String::from_utf8(wd.read("req0all.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(n_all, pairs);

    // With one retry round: the bad ones are asked again with seed 1 and pass.
    let mark = server.total();
    let out = wd.run_ok(&translate_args(
        &server.url,
        "run",
        &["--retry-bad", "1", "--concurrency", "2"],
    ));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["text_ok"], pairs);
    assert_eq!(s["retried"], 2 * per_lang);
    assert_eq!(server.total() - mark, pairs + 2 * per_lang);
    let texts = sword::translate::read_texts_file(&wd.join("run/statements_text.parquet")).unwrap();
    assert_eq!(texts.len(), pairs);
    let map = answered.lock().unwrap().clone();
    for t in &texts {
        // The request sent is the Batch path's prompt for the same custom_id.
        let p = &prompts[&t.custom_id];
        let seed = matches!(t.language.as_str(), "de" | "ja").then_some(1);
        assert!(map.contains_key(&(p.clone(), seed)), "{}", t.custom_id);
        // The text is the labels of that prompt, joined (what the model was made to say).
        let bracket = &p[p.find(": [").unwrap() + 3..p.len() - 1];
        assert_eq!(t.text, format!("{}.", bracket.replace(", ", " ")));
        assert_eq!(t.text_ok, Some(true));
        assert_eq!(t.label, Some(t.strategy.as_deref() == Some("ORG")));
    }
    // Each run directory has its own answer log: a first ask was answered once per directory (twice in
    // all), a retry (seeded, only in `run`) once.
    for ((c, seed), n) in &map {
        let expect = if seed.is_some() { 1 } else { 2 };
        assert_eq!(*n, expect, "{c} (seed {seed:?})");
    }
    // A rerun asks nothing.
    let mark = server.total();
    let out = wd.run_ok(&translate_args(&server.url, "run", &["--retry-bad", "1"]));
    assert_eq!(server.total(), mark);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["cached"], pairs + 2 * per_lang);

    // SWORD prompts (plain + cross-suite) → eval run → score: exact accuracies.
    wd.run_ok(&[
        "eval",
        "prompts",
        "--suite",
        "sword",
        "--input",
        "run/statements_text.parquet",
        "--cross-suite",
        "--out",
        "req.jsonl",
    ]);
    wd.run_ok(&[
        "eval",
        "run",
        "--requests",
        "req.jsonl",
        "--out",
        "ev",
        "--base-url",
        &server.url,
        "--model",
        "m",
        "--require-complete",
    ]);
    let out = wd.run_ok(&[
        "eval",
        "score",
        "--suite",
        "sword",
        "--results",
        "ev/samples.jsonl",
        "--bootstrap",
        "20",
    ]);
    let scores: Value = serde_json::from_slice(&out.stdout).unwrap();
    check_always_false(&scores, 3);
}

/// acc.<lang>.<strategy> is 1 for SS/OS/PSS/POS and 0 for ORG in every language and every variant.
fn check_always_false(scores: &Value, variants: usize) {
    let models = scores["models"].as_array().unwrap();
    assert_eq!(models.len(), variants);
    for m in models {
        for l in LANGS {
            for s in ["ORG", "SS", "OS", "PSS", "POS"] {
                let want = if s == "ORG" { 0.0 } else { 1.0 };
                assert_eq!(
                    m["measures"][format!("acc.{l}.{s}")]["estimate"].as_f64(),
                    Some(want),
                    "{} {l} {s}",
                    m["variant"]
                );
            }
        }
        assert_eq!(m["unparsed"], 0);
    }
}

#[test]
fn translate_resumes_after_the_server_dies_without_asking_twice() {
    let wd = Workdir::new();
    small_run(&wd);
    let pairs = batch_prompts(&wd).len();
    let answered: Answered = Arc::default();
    // The server answers 50 requests, then dies (drops the request in hand, closes its port).
    let mut server = start(0, answered.clone(), Some(50));
    let port = server.port;
    let url = server.url.clone();
    let (code, err) = wd.run_err(&translate_args(
        &url,
        "run",
        &["--retries", "1", "--concurrency", "2", "--require-complete"],
    ));
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("no answer yet"), "{err}");
    server.wait_dead();
    assert_eq!(server.total(), 50);
    // Partial output: the answered ones only; no manifest-less half file.
    let texts = sword::translate::read_texts_file(&wd.join("run/statements_text.parquet")).unwrap();
    assert_eq!(texts.len(), 50);
    // Same URL (same port): resume.
    let server = start(port, answered.clone(), None);
    let out = wd.run_ok(&translate_args(&url, "run", &["--require-complete"]));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (s["cached"].as_u64(), s["answered"].as_u64()),
        (Some(50), Some(pairs as u64 - 50))
    );
    assert_eq!(server.total(), pairs);
    assert!(
        answered.lock().unwrap().values().all(|&n| n == 1),
        "a request was answered twice"
    );
    let texts = sword::translate::read_texts_file(&wd.join("run/statements_text.parquet")).unwrap();
    assert_eq!(texts.len(), pairs);
}

fn make_eval(wd: &Workdir, url: &str, extra: &[&str]) -> std::process::Output {
    Command::new("make")
        .arg("-f")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline/Makefile"))
        .arg("eval")
        .arg(format!("SWORD={}", env!("CARGO_BIN_EXE_sword")))
        .arg(format!("RUN={}", wd.join("run").display()))
        .arg(format!("BASE_URL={url}"))
        .arg("MODEL=test/model:1")
        .arg("BOOTSTRAP=20")
        .arg("EVAL_FLAGS=--backoff-ms 1 --backoff-cap-ms 5 --retries 1")
        .args(extra)
        .env("SWORD_QUIET", "1")
        .current_dir(wd.path())
        .output()
        .expect("run make")
}

#[test]
fn make_eval_runs_the_chain_resumes_and_a_second_run_sends_nothing() {
    if Command::new("make").arg("--version").output().is_err() {
        eprintln!("make is not installed: skipping the make eval check");
        return;
    }
    let wd = Workdir::new();
    small_run(&wd);
    let answered: Answered = Arc::default();
    // First make: the server dies after 100 answers (during translation): make fails, nothing is taken
    // as done.
    let mut server = start(0, answered.clone(), Some(100));
    let (port, url) = (server.port, server.url.clone());
    let out = make_eval(&wd, &url, &["ORIGINALS=3", "JUDGE=judge"]);
    assert!(!out.status.success());
    server.wait_dead();
    assert!(!wd.join("run/translate.manifest.json").exists());
    // Second make: the server comes back and dies again after 150 more (during the SWORD eval run).
    let mut server = start(port, answered.clone(), Some(150));
    let out = make_eval(&wd, &url, &["ORIGINALS=3", "JUDGE=judge"]);
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.wait_dead();
    assert!(wd.join("run/translate.manifest.json").exists());
    let ev = wd.join("run/eval/test_model_1");
    assert!(!ev.join("sword.scores.json").exists());
    // Third make: healthy; finishes.
    let server = start(port, answered.clone(), None);
    let out = make_eval(&wd, &url, &["ORIGINALS=3", "JUDGE=judge"]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        answered.lock().unwrap().values().all(|&n| n == 1),
        "a request was answered twice"
    );
    // The first 3 originals with their variants × 8 languages, and retries for de and ja.
    let texts = sword::translate::read_texts_file(&wd.join("run/statements_text.parquet")).unwrap();
    assert_eq!(texts.len(), statements_of_first(&wd, 3) * 8);
    assert!(texts.iter().all(|t| t.text_ok == Some(true)));
    let scores: Value =
        serde_json::from_slice(&std::fs::read(ev.join("sword.scores.json")).unwrap()).unwrap();
    check_always_false(&scores, 3);
    for f in [
        "report.md",
        "sword_plain.svg",
        "text_ok.svg",
        "sycophancy.scores.json",
        "adversariskqa.scores.json",
    ] {
        assert!(ev.join(f).exists(), "{f}");
    }
    let report = std::fs::read_to_string(ev.join("report.md")).unwrap();
    let n = statements_of_first(&wd, 3);
    assert!(
        report.contains(&format!("| ko | {n} | {n} | {n} | 100.0 |")),
        "{report}"
    );
    // AdversaRiskQA judged "Correct" for every one of the 4 valid answers.
    let aq: Value =
        serde_json::from_slice(&std::fs::read(ev.join("adversariskqa.scores.json")).unwrap())
            .unwrap();
    assert_eq!(
        aq["models"][0]["accuracy_all"].as_f64(),
        Some(100.0),
        "{aq}"
    );
    // Nothing changed: a second make sends no request and rewrites nothing.
    let mark = server.total();
    let before = std::fs::metadata(ev.join("report.md"))
        .unwrap()
        .modified()
        .unwrap();
    let out = make_eval(&wd, &url, &["ORIGINALS=3", "JUDGE=judge"]);
    assert!(out.status.success());
    assert_eq!(server.total(), mark);
    let after = std::fs::metadata(ev.join("report.md"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(before, after);
}

#[test]
fn translate_uses_a_template_file_and_the_first_originals_only() {
    let wd = Workdir::new();
    small_run(&wd);
    let prompts = batch_prompts(&wd);
    let answered: Answered = Arc::default();
    let server = start(0, answered.clone(), None);
    wd.write(
        "t.txt",
        "You are a {language} language writing expert. Generate one sentence for this input triple: <{subject}, {property}, {object}>",
    );
    // A password in the URL (sent as Basic auth, which this server ignores) never reaches the manifest.
    let url_pw = server.url.replace("http://", "http://u:pw-secret-1@");
    let out = wd.run_ok(&translate_args(
        &url_pw,
        "run",
        &["--template", "t.txt", "--originals", "1"],
    ));
    let manifest = String::from_utf8(wd.read("run/translate.manifest.json")).unwrap();
    assert!(!manifest.contains("pw-secret-1"), "{manifest}");
    assert!(manifest.contains("http://u:***@127.0.0.1:"), "{manifest}");
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    // One original: its 5 statements × 8 languages.
    assert_eq!(s["pairs"], 40);
    // The oracle: the Batch path's prompt with the brackets swapped for the template's.
    let first = prompts
        .keys()
        .map(|k| k.split('-').next().unwrap().to_string())
        .min()
        .unwrap();
    let want: std::collections::BTreeSet<String> = prompts
        .iter()
        .filter(|(k, _)| k.starts_with(&format!("{first}-")))
        .map(|(_, p)| {
            let i = p.find(": [").unwrap();
            format!("{}: <{}>", &p[..i], &p[i + 3..p.len() - 1])
        })
        .collect();
    assert_eq!(want.len(), 40);
    let seen: std::collections::BTreeSet<String> = answered
        .lock()
        .unwrap()
        .keys()
        .map(|(c, _)| c.clone())
        .collect();
    assert_eq!(seen, want);
    // The model does not recognise this prompt and answers "?": no letters at all, so every text fails
    // its script check (and is kept, marked).
    assert_eq!(s["text_ok"], 0);
    assert_eq!(s["reasons"]["wrong_script"], 40);
    // A template without the three placeholders is a usage error.
    wd.write("bad.txt", "Translate {subject}");
    let (code, err) = wd.run_err(&translate_args(
        &server.url,
        "run",
        &["--template", "bad.txt"],
    ));
    assert_eq!(code, 2);
    assert!(err.contains("{property}"), "{err}");
}
