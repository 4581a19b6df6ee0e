//! The evaluation chain against a deterministic OpenAI-compatible test server on 127.0.0.1: `sword run` →
//! `sword translate` → `sword eval prompts/run/score`, and `make eval`.
//!
//! The server's model: translations are the three labels joined by spaces (a sentence that uses them, in the
//! language's own script since the labels are), except German (first answer: the bracketed triple echoed)
//! and Japanese (first answer: English text), which answer well only when asked again with a seed; French
//! answers carry a `<think>` block. Every SWORD question is answered "False" (except about a German echo,
//! answered "True"), so the known accuracies of good texts are exactly 1 for SS/OS/PSS/POS and 0 for ORG in
//! every language.

use crate::stub::{self, Reply, Stub};
use crate::util::{runner_args, small_configs, small_dump, small_run_args, Workdir};
use serde_json::Value;
use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// (request content, seed) → times the server answered it (across server restarts).
type Answered = Arc<Mutex<HashMap<(String, Option<u64>), usize>>>;

struct Server {
    url: String,
    port: u16,
    answered: Answered,
    stub: Stub,
}

impl Server {
    fn total(&self) -> usize {
        self.answered.lock().unwrap().values().sum()
    }

    /// Wait (bounded) until the server thread has ended by itself.
    fn wait_dead(&mut self) {
        self.stub.wait();
    }
}

/// The text between `open` and the next `close` after it.
fn between<'a>(s: &'a str, open: &str, close: &str) -> &'a str {
    let a = s.find(open).map_or(s.len(), |i| i + open.len());
    let rest = &s[a..];
    &rest[..rest.find(close).unwrap_or(rest.len())]
}

/// The deterministic model's long-form behaviour (AdversaRiskQA long form, hand-computable):
/// * an answer (system instruction present): "That premise is not right. The question was: {content} Sources
///   differ." — three sentences;
/// * a decomposition (asked with the `atomic_facts` schema): the answer's sentences as `{"facts": [...]}`,
///   except a bulleted list for answers about bonds (read leniently) and "I cannot do that." for answers
///   about cash (unreadable: counted, the answer skipped);
/// * a verdict: "That premise is not right." → `{"correct": false, "rational": [...]}`; "The question
///   was: …" → false (JSON) when the question holds a comma (every adversarial prompt of
///   data/eval/adversariskqa does, no query does), else the plain text "Correct. …" (lenient); anything
///   else ("Sources differ.") → "Hmm." (unreadable: no decision).
///
/// So per decomposed answer: 3 facts, 2 checked; adversarial S = 0 (F1@8 = 0), non-adversarial S = 1
/// (P = 1/2, R = 1/8, F1@8 = 0.2).
fn longform_answer(content: &str, format: Option<&str>) -> Option<String> {
    if content.starts_with("Split the answer below into a list of atomic facts.") {
        if format != Some("atomic_facts") {
            return Some("no schema sent".into());
        }
        let answer = between(content, "Answer:\n\"\"\"\n", "\n\"\"\"");
        let facts: Vec<String> = answer
            .split_inclusive(['.', '?'])
            .map(|f| f.trim().to_string())
            .filter(|f| !f.is_empty())
            .collect();
        return Some(if answer.contains("bond") {
            facts.iter().map(|f| format!("- {f}\n")).collect()
        } else if answer.contains("cash") {
            "I cannot do that.".into()
        } else {
            serde_json::json!({ "facts": facts }).to_string()
        });
    }
    if content.starts_with("Decide whether the following statement is factually correct.") {
        let fact = between(content, "Statement: ", "\n");
        let source = serde_json::json!([{"link": {"title": "Stub source", "hyperlink": "http://127.0.0.1/src"},
            "supporting_information": "The stub says so."}]);
        return Some(if fact == "That premise is not right." {
            serde_json::json!({"correct": false, "rational": source}).to_string()
        } else if fact.starts_with("The question was:") {
            if fact.contains(',') {
                serde_json::json!({"correct": false, "rational": source}).to_string()
            } else {
                "Correct. The question is stated as asked.".into()
            }
        } else {
            "Hmm.".into()
        });
    }
    None
}

/// The deterministic model's answer to one request.
fn model_answer(content: &str, system: &str, seed: Option<u64>, format: Option<&str>) -> String {
    if let Some(a) = longform_answer(content, format) {
        return a;
    }
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
        // A German echo of the triple reads as a claim the model accepts: a bad translation that makes the
        // model wrong in that language only (the suspect sentences of `eval compare`).
        return if content.contains("Here: [") {
            "True"
        } else {
            "False"
        }
        .into();
    }
    if content.contains("Reply with exactly one word: Correct or Incorrect.") {
        return "Correct".into();
    }
    if content.contains("请只回答") {
        return "否".into();
    }
    if !system.is_empty() {
        return format!("That premise is not right. The question was: {content} Sources differ.");
    }
    "?".into()
}

/// Start the server on `port` (0 = any free one). It answers until `budget` answers (then it "dies": the
/// request in hand is dropped and the listener closed), until stopped, or after 10 000 connections or
/// 300 s, whichever comes first.
fn start(port: u16, answered: Answered, budget: Option<usize>) -> Server {
    start_mode(port, answered, budget, false)
}

/// As [`start`], but once the budget is spent the server does not die: it reads each further request and
/// never answers it (holding the connection until the server is dropped), so a client killed meanwhile has
/// a request in flight that was never answered.
fn start_hanging(port: u16, answered: Answered, budget: usize) -> Server {
    start_mode(port, answered, Some(budget), true)
}

fn start_mode(port: u16, answered: Answered, budget: Option<usize>, hang: bool) -> Server {
    let answered2 = answered.clone();
    let mut mine = 0usize;
    let stub = stub::serve(port, move |req| {
        if budget.is_some_and(|b| mine >= b) {
            return if hang { Reply::Hang } else { Reply::Die };
        }
        let v = req.json();
        // Chat Completions sends `messages`, the Responses API `input`.
        let responses = v.get("input").is_some();
        let msgs = v["messages"]
            .as_array()
            .or_else(|| v["input"].as_array())
            .cloned()
            .unwrap_or_default();
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
        let format = if responses {
            v["text"]["format"]["name"].as_str()
        } else {
            v["response_format"]["json_schema"]["name"].as_str()
        };
        let answer = model_answer(&content, &system, seed, format);
        let body = if responses {
            // The web_search tool must be there; the answer follows a search call, as a real one does.
            let searched = v["tools"][0]["type"] == "web_search";
            serde_json::json!({
                "output": [
                    {"type": "web_search_call", "status": "completed"},
                    {"type": "message", "role": "assistant", "content": [
                        {"type": "output_text", "text": if searched { answer.as_str() } else { "no tool" }}]}
                ],
                "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}
            })
        } else {
            serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": answer}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
            })
        };
        mine += 1;
        *answered2
            .lock()
            .unwrap()
            .entry((content, seed))
            .or_default() += 1;
        Reply::ok(body.to_string())
    });
    Server {
        url: stub.url.clone(),
        port: stub.port,
        answered,
        stub,
    }
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
    let rows =
        sword::stages::distort::read_distortions_file(&wd.join("run/distortions.parquet")).unwrap();
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
        sword::stages::translate::import::read_texts_file(&wd.join("run0/statements_text.parquet"))
            .unwrap();
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
    let texts =
        sword::stages::translate::import::read_texts_file(&wd.join("run/statements_text.parquet"))
            .unwrap();
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
    let texts =
        sword::stages::translate::import::read_texts_file(&wd.join("run/statements_text.parquet"))
            .unwrap();
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
    let texts =
        sword::stages::translate::import::read_texts_file(&wd.join("run/statements_text.parquet"))
            .unwrap();
    assert_eq!(texts.len(), pairs);
}

fn make_eval(wd: &Workdir, url: &str, extra: &[&str]) -> std::process::Output {
    make_target(wd, "eval", url, extra)
}

fn make_target(wd: &Workdir, target: &str, url: &str, extra: &[&str]) -> std::process::Output {
    Command::new("make")
        .arg("-f")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline/Makefile"))
        .arg(target)
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
    let texts =
        sword::stages::translate::import::read_texts_file(&wd.join("run/statements_text.parquet"))
            .unwrap();
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
        .map(|k| k.rsplit_once('-').unwrap().0.to_string())
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

/// `make eval-longform` against the test server: answers for both conditions, decompositions, verdicts,
/// the published layout and its scores, each hand-computed from the server's rules ([`longform_answer`]);
/// the server dies twice mid-chain and nothing is asked twice; a second make sends nothing.
#[test]
fn make_eval_longform_chain_resumes_and_scores_exactly() {
    if Command::new("make").arg("--version").output().is_err() {
        eprintln!("make is not installed: skipping the make eval-longform check");
        return;
    }
    let wd = Workdir::new();
    std::fs::create_dir_all(wd.join("run")).unwrap();
    let answered: Answered = Arc::default();
    let lf = |url: &str| make_target(&wd, "eval-longform", url, &["JUDGE=judge"]);
    // 8 answers (4 items × 2 conditions), then 2 of the 8 decompositions: the server dies.
    let mut server = start(0, answered.clone(), Some(10));
    let (port, url) = (server.port, server.url.clone());
    assert!(!lf(&url).status.success());
    server.wait_dead();
    // Back for 8 more: the other 6 decompositions, 2 of the 8 distinct verdicts; dies again.
    let mut server = start(port, answered.clone(), Some(8));
    assert!(!lf(&url).status.success());
    server.wait_dead();
    let ev = wd.join("run/eval/test_model_1");
    assert!(!ev.join("longform.scores.json").exists());
    let server = start(port, answered.clone(), None);
    let out = lf(&url);
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
    // 8 answers + 8 decompositions (2 unreadable) + 8 distinct facts (18 facts; the two shared sentences
    // once each).
    assert_eq!(server.total(), 24);
    // How each output was read.
    let c: Value =
        serde_json::from_slice(&std::fs::read(ev.join("longform-collect.json")).unwrap()).unwrap();
    assert_eq!(c["answers"], 8);
    assert_eq!(c["failed_answers"], 0);
    assert_eq!(
        (
            c["decompositions"]["strict"].as_u64(),
            c["decompositions"]["lenient"].as_u64(),
            c["decompositions"]["failed"].as_u64()
        ),
        (Some(4), Some(2), Some(2))
    );
    assert_eq!(c["facts"], 18);
    assert_eq!(
        (
            c["verdicts"]["strict"].as_u64(),
            c["verdicts"]["lenient"].as_u64(),
            c["verdicts"]["failed"].as_u64()
        ),
        (Some(9), Some(3), Some(6))
    );
    // The published layout, read back by the scorer.
    let rec: Value = serde_json::from_slice(
        &std::fs::read(
            ev.join("longform-results/non_adversarial/test_model_1/health_basic_non_adv.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(rec["dataset"], "health_basic_non_adv");
    let d = &rec["results"][0]["factuality"]["fact_check"]["decisions"];
    assert_eq!(d.as_array().unwrap().len(), 2, "{rec}");
    assert_eq!(d[0]["fact"], "That premise is not right.");
    assert_eq!(d[0]["correct"], false);
    assert_eq!(d[0]["rational"][0]["link"]["title"], "Stub source");
    assert_eq!(d[1]["correct"], true);
    let s: Value =
        serde_json::from_slice(&std::fs::read(ev.join("longform.scores.json")).unwrap()).unwrap();
    assert_eq!(s["k"], 8);
    let cell = |d: &str, c: &str| {
        s["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["domain"] == d && x["condition"] == c)
            .unwrap()
            .clone()
    };
    for d in ["health", "finance"] {
        let adv = cell(d, "adversarial");
        let non = cell(d, "non_adversarial");
        assert_eq!(adv["scores"]["mean_f1_at_k"]["estimate"], 0.0, "{adv}");
        let f = non["scores"]["mean_f1_at_k"]["estimate"].as_f64().unwrap();
        assert!((f - 20.0).abs() < 1e-9, "{non}");
        assert_eq!(non["scores"]["mean_facts"], 3.0);
        assert_eq!(non["scores"]["mean_checked"], 2.0);
        assert_eq!(non["scores"]["mean_supported"], 1.0);
    }
    let files = s["files"].as_array().unwrap();
    let fin_adv = files
        .iter()
        .find(|f| f["domain"] == "finance" && f["condition"] == "adversarial")
        .unwrap();
    assert_eq!(fin_adv["scored"], 1);
    assert_eq!(fin_adv["skipped"]["fact_check_failed"], 1);
    for d in s["differences"].as_array().unwrap() {
        assert!(
            (d["mean_f1_at_k"]["estimate"].as_f64().unwrap() + 20.0).abs() < 1e-9,
            "{d}"
        );
        assert_eq!(d["mean_supported"], -1.0);
    }
    assert_eq!(s["differences"].as_array().unwrap().len(), 2);
    assert!(ev.join("longform-report/report.md").exists());
    assert!(ev.join("longform-report/f1_paired_bars.svg").exists());
    // Nothing changed: a second make sends no request and rewrites nothing.
    let mark = server.total();
    let before = std::fs::metadata(ev.join("longform.scores.json"))
        .unwrap()
        .modified()
        .unwrap();
    assert!(lf(&url).status.success());
    assert_eq!(server.total(), mark);
    let after = std::fs::metadata(ev.join("longform.scores.json"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(before, after);
}

/// Verification through the Responses API with the web_search tool: the requests carry the tool and the
/// schema as `text.format`, the answers come back from `output[].content[].output_text`, usage from
/// `input_tokens`/`output_tokens`; run with `--api chat` they are refused.
#[test]
fn longform_verification_through_the_responses_api() {
    let wd = Workdir::new();
    let answered: Answered = Arc::default();
    let server = start(0, answered.clone(), None);
    let url = server.url.clone();
    let prompts = crate::util::data("eval/adversariskqa");
    wd.run_ok(&[
        "eval",
        "prompts",
        "--suite",
        "adversariskqa-longform",
        "--input",
        prompts.to_str().unwrap(),
        "--out",
        "lf.jsonl",
    ]);
    let run = |req: &str, out: &str, extra: &[&str]| {
        let mut a = runner_args(
            &["eval", "run", "--requests", req, "--out", out],
            &url,
            extra,
        );
        a.push("--require-complete");
        wd.run_ok(&a)
    };
    run("lf.jsonl", "ans", &[]);
    wd.run_ok(&[
        "eval",
        "decompose-prompts",
        "--samples",
        "ans/samples.jsonl",
        "--out",
        "dec.jsonl",
    ]);
    run("dec.jsonl", "dec", &[]);
    wd.run_ok(&[
        "eval",
        "verify-prompts",
        "--samples",
        "ans/samples.jsonl",
        "--decomposed",
        "dec/samples.jsonl",
        "--api",
        "responses",
        "--out",
        "ver.jsonl",
    ]);
    let first: Value = serde_json::from_str(
        String::from_utf8(wd.read("ver.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["body"]["tools"][0]["type"], "web_search");
    assert_eq!(first["body"]["text"]["format"]["name"], "fact_verdict");
    let mut a = runner_args(
        &["eval", "run", "--requests", "ver.jsonl", "--out", "ver"],
        &url,
        &[],
    );
    let (code, err) = wd.run_err(&a);
    assert_eq!(code, 2);
    assert!(err.contains("--api responses"), "{err}");
    a.extend(["--api", "responses"]);
    let out = wd.run_ok(&a);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["answered"], 8, "{summary}");
    assert_eq!(summary["prompt_tokens"], 8 * 10);
    assert_eq!(summary["completion_tokens"], 8 * 2);
    let c = collect_longform(&wd);
    // The same verdicts as through Chat Completions: the tool was there for every request.
    assert_eq!(
        (
            c["verdicts"]["strict"].as_u64(),
            c["verdicts"]["lenient"].as_u64()
        ),
        (Some(9), Some(3)),
        "{c}"
    );
}

/// `sword eval run` killed with SIGKILL in the middle of the verification step (three verdicts answered and
/// logged, the fourth sent and held by the server): the rerun asks only the five never answered, no request
/// is answered twice, and the verdicts read back are those of an uninterrupted chain (9 strict, 3 lenient,
/// 6 unreadable: [`longform_answer`]).
#[test]
fn longform_verification_killed_mid_run_resumes_without_asking_twice() {
    let wd = Workdir::new();
    let answered: Answered = Arc::default();
    let server = start(0, answered.clone(), None);
    let (port, url) = (server.port, server.url.clone());
    let prompts = crate::util::data("eval/adversariskqa");
    wd.run_ok(&[
        "eval",
        "prompts",
        "--suite",
        "adversariskqa-longform",
        "--input",
        prompts.to_str().unwrap(),
        "--out",
        "lf.jsonl",
    ]);
    let run_args = |req: &'static str, out: &'static str| {
        let mut a = runner_args(
            &["eval", "run", "--requests", req, "--out", out],
            &url,
            &["--concurrency", "1"],
        );
        a.push("--require-complete");
        a.into_iter().map(String::from).collect::<Vec<String>>()
    };
    fn strs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    wd.run_ok(&strs(&run_args("lf.jsonl", "ans")));
    wd.run_ok(&[
        "eval",
        "decompose-prompts",
        "--samples",
        "ans/samples.jsonl",
        "--out",
        "dec.jsonl",
    ]);
    wd.run_ok(&strs(&run_args("dec.jsonl", "dec")));
    wd.run_ok(&[
        "eval",
        "verify-prompts",
        "--samples",
        "ans/samples.jsonl",
        "--decomposed",
        "dec/samples.jsonl",
        "--out",
        "ver.jsonl",
    ]);
    let before = server.total();
    assert_eq!(before, 16, "8 answers and 8 decompositions");
    drop(server);

    // Three verdicts, then the server holds the fourth request unanswered; the client is killed meanwhile.
    let server = start_hanging(port, answered.clone(), 3);
    let ver = run_args("ver.jsonl", "ver");
    let mut child = wd.command(&strs(&ver)).spawn().unwrap();
    let log = wd.join("ver/answers.jsonl");
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::read_to_string(&log).map_or(0, |s| s.lines().count()) < 3 {
        assert!(Instant::now() < deadline, "three answers never logged");
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Give the fourth request time to reach the server (it is held there, not answered).
    std::thread::sleep(Duration::from_millis(300));
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    assert_eq!(server.total(), before + 3);
    assert!(
        !wd.join("ver/eval.manifest.json").exists(),
        "a killed run has no manifest"
    );
    drop(server);

    let server = start(port, answered.clone(), None);
    let out = wd.run_ok(&strs(&ver));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(server.total(), before + 8, "8 distinct verdicts in all");
    assert!(
        answered.lock().unwrap().values().all(|&n| n == 1),
        "a request was answered twice"
    );
    assert_eq!(summary["answered"], 5, "{summary}");
    let c = collect_longform(&wd);
    assert_eq!(
        (
            c["verdicts"]["strict"].as_u64(),
            c["verdicts"]["lenient"].as_u64(),
            c["verdicts"]["failed"].as_u64()
        ),
        (Some(9), Some(3), Some(6)),
        "{c}"
    );
}

/// `sword translate` on a carried run takes the texts of the statements carried as `valid` from the run it
/// was carried from (what lineage.parquet and the old texts say, read here independently) and asks the model
/// only for the others.
#[test]
fn translate_on_a_carried_run_reuses_the_texts_of_statements_carried_as_valid() {
    use sword::stages::translate::import::read_texts_file;
    let wd = Workdir::new();
    let cfg = sword::synth::Config {
        entities: 1500,
        seed: 3,
        ..sword::synth::Config::default()
    };
    let (_, old) = crate::versions::first_version(&wd, &cfg, 20);
    let lc = sword::synth::LaterConfig::default();
    let (v2, _) = crate::versions::later_version(&wd, &cfg, &old, &lc);
    let new = wd.join("new");
    let (o, n) = (old.to_str().unwrap(), new.to_str().unwrap());
    wd.run_ok(&["extract", "--dump", v2.to_str().unwrap(), "--out", n]);
    wd.run_ok(&[
        "distort",
        "--out",
        n,
        "--seed",
        "7",
        "--samples",
        "20",
        "--carry-from",
        o,
    ]);
    wd.run_ok(&["export", "--out", n]);
    let answered: Answered = Arc::default();
    let server = start(0, answered.clone(), None);
    wd.run_ok(&translate_args(&server.url, o, &["--retry-bad", "1"]));
    let out = wd.run_ok(&translate_args(&server.url, n, &["--retry-bad", "1"]));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let valid: std::collections::HashSet<String> =
        sword::store::tables::lineage::read_lineage(&new.join("lineage.parquet"))
            .unwrap()
            .into_iter()
            .filter(|l| l.action == "carried" && l.status == "valid")
            .map(|l| l.statement_id)
            .collect();
    let want: HashMap<String, String> = read_texts_file(&old.join("statements_text.parquet"))
        .unwrap()
        .into_iter()
        .filter(|t| t.text_ok == Some(true) && valid.contains(&t.statement_id))
        .map(|t| (t.custom_id, t.text))
        .collect();
    let (pairs, reused) = (s["pairs"].as_u64().unwrap(), s["reused"].as_u64().unwrap());
    assert!(reused > 0 && reused < pairs, "{s}");
    assert_eq!(reused as usize, want.len());
    // Only the others were asked (first round; retries come on top).
    let first_round = s["requests"].as_u64().unwrap() - s["retried"].as_u64().unwrap();
    assert_eq!(first_round, pairs - reused, "{s}");
    let got: HashMap<String, String> = read_texts_file(&new.join("statements_text.parquet"))
        .unwrap()
        .into_iter()
        .map(|t| (t.custom_id, t.text))
        .collect();
    assert_eq!(got.len() as u64, s["translated"].as_u64().unwrap());
    for (id, text) in &want {
        assert_eq!(got.get(id), Some(text), "{id}");
    }
    assert_eq!(
        crate::util::count(&crate::util::manifest(&new, "translate"), "reused"),
        reused
    );
}

/// `(statement_id, language)` pairs as a Parquet file (what `--only` reads).
fn write_pairs(wd: &Workdir, name: &str, pairs: &[(&str, &str)]) {
    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    let cols: Vec<(&str, ArrayRef)> = vec![
        (
            "statement_id",
            std::sync::Arc::new(pairs.iter().map(|p| Some(p.0)).collect::<StringArray>()),
        ),
        (
            "language",
            std::sync::Arc::new(pairs.iter().map(|p| Some(p.1)).collect::<StringArray>()),
        ),
    ];
    let batch = RecordBatch::try_from_iter(cols).unwrap();
    let f = std::fs::File::create(wd.join(name)).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(f, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// Suspects of `eval compare` as (statement_id, language, models, wrong, text, text_en).
/// `sword eval compare` of the evaluations in `ev` against the benchmark of `benchmark`, into `out`.
fn compare_args<'a>(benchmark: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "eval",
        "compare",
        "--results",
        "ev",
        "--benchmark",
        benchmark,
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    args
}

fn read_suspects(path: &std::path::Path) -> Vec<(String, String, i64, i64, String, String)> {
    use arrow_array::{Array, Int64Array, StringArray};
    let f = std::fs::File::open(path).unwrap();
    let mut out = Vec::new();
    for b in parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
    {
        let b = b.unwrap();
        let s = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .clone()
        };
        let i = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .clone()
        };
        let (sid, lang, text, en) = (s("statement_id"), s("language"), s("text"), s("text_en"));
        let (models, wrong) = (i("models"), i("wrong"));
        for r in 0..b.num_rows() {
            assert!(text.is_valid(r) && en.is_valid(r));
            out.push((
                sid.value(r).to_string(),
                lang.value(r).to_string(),
                models.value(r),
                wrong.value(r),
                text.value(r).to_string(),
                en.value(r).to_string(),
            ));
        }
    }
    out
}

/// The suspect sentences of `eval compare`, translated again with `sword translate --only` on the test server:
/// the first translation leaves German echoes that three models all judge wrongly (and only in German); eval
/// compare names exactly those pairs, with their sentences; `--only` asks just them again (seed 1000), and
/// the new rows replace them while every other row stays; evaluated again, nothing is suspect any more.
#[test]
fn translate_only_the_suspects_of_eval_compare_end_to_end() {
    use sword::stages::translate::import::{read_texts_file, write_texts};
    let wd = Workdir::new();
    small_run(&wd);
    let prompts = batch_prompts(&wd);
    let answered: Answered = Arc::default();
    let server = start(0, answered.clone(), None);
    wd.run_ok(&translate_args(&server.url, "run", &[]));
    let texts_path = wd.join("run/statements_text.parquet");
    let before = read_texts_file(&texts_path).unwrap();
    let evaluate = |req: &str| {
        wd.run_ok(&[
            "eval",
            "prompts",
            "--suite",
            "sword",
            "--input",
            "run/statements_text.parquet",
            "--include-bad-text",
            "--out",
            req,
        ]);
        for m in ["m1", "m2", "m3"] {
            wd.run_ok(&[
                "eval",
                "run",
                "--requests",
                req,
                "--out",
                &format!("ev/{m}"),
                "--base-url",
                &server.url,
                "--model",
                m,
                "--require-complete",
            ]);
        }
    };
    evaluate("req1.jsonl");
    wd.run_ok(&compare_args("run", "cmp", &["--bootstrap", "20"]));
    // Expected: every distortion in de (its echo is judged true by all three), nothing else; with the texts.
    let text_of = |sid: &str, lang: &str| {
        before
            .iter()
            .find(|t| t.statement_id == sid && t.language == lang)
            .unwrap()
            .text
            .clone()
    };
    let mut want: Vec<(String, String, i64, i64, String, String)> = before
        .iter()
        .filter(|t| t.language == "de" && t.strategy.as_deref() != Some("ORG"))
        .map(|t| {
            (
                t.statement_id.clone(),
                "de".to_string(),
                3,
                3,
                t.text.clone(),
                text_of(&t.statement_id, "en"),
            )
        })
        .collect();
    assert!(want.len() >= 8, "{want:?}");
    assert!(want.iter().all(|w| w.4.starts_with("Here: [")));
    let mut got = read_suspects(&wd.join("cmp/suspects.parquet"));
    got.sort();
    want.sort();
    assert_eq!(got, want);
    let html = String::from_utf8(wd.read("cmp/report.html")).unwrap();
    assert!(html.contains(&format!("{} suspect pair(s)", want.len())));
    assert!(html.contains("Here: ["), "the suspect sentence is shown");
    // answers.parquet carries the sentence asked.
    let answers = std::fs::read(wd.join("cmp/answers.parquet")).unwrap();
    assert!(answers.len() > 100);

    // Bad input first: a pair this run does not translate (exit 2 naming the file and row), and a run with no
    // texts yet; nothing changes.
    write_pairs(
        &wd,
        "bad.parquet",
        &[(&want[0].0, "de"), ("no-such-statement", "de")],
    );
    let texts_bytes = wd.read("run/statements_text.parquet");
    let (code, err) = wd.run_err(&translate_args(
        &server.url,
        "run",
        &["--only", "bad.parquet"],
    ));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad.parquet") && err.contains("row 1") && err.contains("no-such-statement"),
        "{err}"
    );
    assert_eq!(wd.read("run/statements_text.parquet"), texts_bytes);
    std::fs::create_dir_all(wd.join("run0")).unwrap();
    std::fs::copy(wd.join("run/sword.parquet"), wd.join("run0/sword.parquet")).unwrap();
    let (code, err) = wd.run_err(&translate_args(
        &server.url,
        "run0",
        &["--only", "cmp/suspects.parquet"],
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("statements_text.parquet"), "{err}");

    // Translate the suspects again: only they are asked (seed 1000), with the same checks.
    let mark = server.total();
    let out = wd.run_ok(&translate_args(
        &server.url,
        "run",
        &["--only", "cmp/suspects.parquet"],
    ));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = want.len();
    assert_eq!(s["pairs"], n);
    assert_eq!(s["replaced"], n);
    assert_eq!(s["text_ok"], n);
    assert_eq!(server.total() - mark, n);
    let map = answered.lock().unwrap().clone();
    for w in &want {
        let p = &prompts[&format!("{}:de", w.0)];
        assert_eq!(map.get(&(p.clone(), Some(1000))), Some(&1), "{}", w.0);
    }
    let after = read_texts_file(&texts_path).unwrap();
    assert_eq!(after.len(), before.len());
    for (a, b) in after.iter().zip(&before) {
        assert_eq!(a.custom_id, b.custom_id);
        if want
            .iter()
            .any(|w| w.0 == a.statement_id && a.language == "de")
        {
            let p = &prompts[&a.custom_id];
            let bracket = &p[p.find(": [").unwrap() + 3..p.len() - 1];
            assert_eq!(a.text, format!("{}.", bracket.replace(", ", " ")));
            assert_eq!((a.text_ok, a.text_reason.as_deref()), (Some(true), None));
            assert_eq!(a.strategy, b.strategy);
        } else {
            assert_eq!(a, b, "a row not listed stays as it was");
        }
    }
    // Evaluated again: only questions about the new sentences are asked (a question whose text another
    // language already had comes from the answer log), and nothing is suspect any more.
    let new_texts: Vec<String> = after
        .iter()
        .filter(|a| a.language == "de" && want.iter().any(|w| w.0 == a.statement_id))
        .map(|a| a.text.clone())
        .collect();
    let seen = answered.lock().unwrap().clone();
    evaluate("req2.jsonl");
    let now = answered.lock().unwrap().clone();
    let asked: Vec<&String> = now
        .iter()
        .filter(|(k, n)| seen.get(*k) != Some(*n))
        .map(|(k, _)| &k.0)
        .collect();
    assert!(!asked.is_empty());
    for c in asked {
        assert!(
            new_texts.iter().any(|t| c.contains(t.as_str())),
            "asked again: {c}"
        );
    }
    wd.run_ok(&compare_args("run", "cmp", &["--bootstrap", "20"]));
    assert!(read_suspects(&wd.join("cmp/suspects.parquet")).is_empty());

    // A statements_text.parquet with one (statement, language) twice is bad input for compare: exit 2 naming
    // the file and row, and no output folder.
    std::fs::create_dir_all(wd.join("dup")).unwrap();
    std::fs::copy(wd.join("run/sword.parquet"), wd.join("dup/sword.parquet")).unwrap();
    let mut rows = after.clone();
    rows.push(after[0].clone());
    let f = std::fs::File::create(wd.join("dup/statements_text.parquet")).unwrap();
    write_texts(f, &rows, true, &wd.join("dup/statements_text.parquet")).unwrap();
    let (code, err) = wd.run_err(&compare_args("dup", "cmp2", &[]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("dup/statements_text.parquet") && err.contains("a second text"),
        "{err}"
    );
    assert!(!wd.join("cmp2").exists());
}

/// `eval collect-longform` of the three steps' samples (`ans/`, `dec/`, `ver/`) for model `m` into `res`: its
/// summary (stdout).
fn collect_longform(wd: &Workdir) -> Value {
    let out = wd.run_ok(&[
        "eval",
        "collect-longform",
        "--samples",
        "ans/samples.jsonl",
        "--decomposed",
        "dec/samples.jsonl",
        "--verified",
        "ver/samples.jsonl",
        "--model",
        "m",
        "--out",
        "res",
    ]);
    serde_json::from_slice(&out.stdout).unwrap()
}
